// Tier 2 of the compilation cache: compiled programs on disk, shared by
// processes (tier 1, in memory, is in exec.cpp).
//
// Invariants:
//  - An entry is one file named by a fingerprint of (plugin identity, program
//    text) and holds both in full; it is used only when both match exactly, so
//    a fingerprint collision or another plugin build is a miss, never a wrong
//    program.
//  - Entries are written under a temporary name and renamed into place:
//    concurrent readers see a whole entry or none.
//  - An entry that cannot be used (truncated, corrupt, refused by the plugin)
//    is removed and the program recompiled; it is never an error.
//  - The directory is kept under a size bound, least recently used first out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace torch_tpu::exec::disk_cache {

// TORCH_TPU_CACHE_DIR, else $XDG_CACHE_HOME/torch_tpu, else ~/.cache/torch_tpu;
// "" when TORCH_TPU_CACHE_DIR is set to the empty string (cache off).
const std::string& directory();
// TORCH_TPU_CACHE_MAX_BYTES (default 2 GiB).
int64_t max_bytes();

// The serialized program stored for (identity, text), if a valid entry exists.
std::optional<std::string> load(const std::string& identity, const std::string& text);
void store(const std::string& identity, const std::string& text, const std::string& program);
// Removes the entry for (identity, text): the plugin refused its bytes.
void discard(const std::string& identity, const std::string& text);

}  // namespace torch_tpu::exec::disk_cache
