// The on-disk tier of the compilation cache: files named by hash, written
// by atomic rename, bounded in size, tolerant of corrupt entries.
#include "exec/disk_cache.h"
#include "runtime/env.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <system_error>
#include <vector>

namespace torch_tpu::exec::disk_cache {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'T', 'T', 'P', 'U', 'X', 'C', '0', '1'};

uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

fs::path entry_path(const std::string& identity, const std::string& text) {
  char name[40];
  std::snprintf(name, sizeof(name), "%016llx%016llx.bin",
                static_cast<unsigned long long>(fnv1a(text, fnv1a(identity))),
                static_cast<unsigned long long>(fnv1a(identity, fnv1a(text, 0x84222325cbf29ce4ULL))));
  return fs::path(directory()) / name;
}

void put_string(std::string& out, const std::string& s) {
  uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out.append(s);
}

// Reads a length-prefixed string at `pos`; false when the data ends early.
bool get_string(const std::string& in, size_t& pos, std::string& s) {
  uint64_t n;
  if (in.size() - pos < sizeof(n)) return false;
  std::memcpy(&n, in.data() + pos, sizeof(n));
  pos += sizeof(n);
  if (in.size() - pos < n) return false;
  s.assign(in, pos, n);
  pos += n;
  return true;
}

// The directory's total size: when over the bound, least recently used
// entries are dropped until it is under `target`.
uint64_t scan_and_trim(uint64_t target) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  uint64_t total = 0;
  for (auto& e : fs::directory_iterator(directory(), ec)) {
    if (e.path().extension() != ".bin") continue;
    uint64_t size = e.file_size(ec);
    if (ec) continue;
    total += size;
    entries.emplace_back(e.last_write_time(ec), e.path());
  }
  if (total <= static_cast<uint64_t>(max_bytes())) return total;
  std::sort(entries.begin(), entries.end());
  for (auto& [time, path] : entries) {
    if (total <= target) break;
    uint64_t size = fs::file_size(path, ec);
    if (!ec && fs::remove(path, ec)) total -= size;
  }
  return total;
}

// A scan stats every entry (tens of thousands in a cache used for a while),
// so a process scans at its first store and then only when the size it last
// saw plus what it stored since crosses the bound; eviction then goes down to
// three quarters of the bound, so scans stay rare. Entries other processes
// store count once one of them scans.
void keep_under_bound(uint64_t stored_bytes) {
  static std::mutex mutex;
  static std::optional<uint64_t> known_bytes;
  std::lock_guard<std::mutex> lock(mutex);
  auto bound = static_cast<uint64_t>(max_bytes());
  if (known_bytes) *known_bytes += stored_bytes;
  if (!known_bytes || *known_bytes > bound) known_bytes = scan_and_trim(bound / 4 * 3);
}

}  // namespace

const std::string& directory() {
  static const std::string dir = [] {
    if (auto v = env::get(env::kCacheDir)) return *v;
    std::string xdg = env::non_empty_or(env::kXdgCacheHome, "");
    if (!xdg.empty()) return xdg + "/torch_tpu";
    std::string home = env::non_empty_or(env::kHome, "");
    return home.empty() ? std::string() : home + "/.cache/torch_tpu";
  }();
  return dir;
}

int64_t max_bytes() {
  static const int64_t n = env::positive_int(env::kCacheMaxBytes, int64_t(2) << 30);
  return n;
}

std::optional<std::string> load(const std::string& identity, const std::string& text) {
  if (directory().empty()) return std::nullopt;
  fs::path path = entry_path(identity, text);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string stored_identity, stored_text, program;
  size_t pos = sizeof(kMagic);
  bool valid = data.size() >= sizeof(kMagic) + sizeof(uint64_t) &&
               std::memcmp(data.data(), kMagic, sizeof(kMagic)) == 0;
  if (valid) {
    uint64_t checksum;
    std::memcpy(&checksum, data.data() + data.size() - sizeof(checksum), sizeof(checksum));
    std::string body = data.substr(0, data.size() - sizeof(checksum));
    valid = fnv1a(body) == checksum && get_string(body, pos, stored_identity) && get_string(body, pos, stored_text) &&
            get_string(body, pos, program) && pos == body.size();
  }
  if (!valid) {
    std::error_code ec;
    fs::remove(path, ec);  // truncated or corrupt: the next store replaces it
    return std::nullopt;
  }
  if (stored_identity != identity || stored_text != text) return std::nullopt;
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
  return program;
}

void store(const std::string& identity, const std::string& text, const std::string& program) {
  if (directory().empty()) return;
  std::error_code ec;
  fs::create_directories(directory(), ec);
  fs::path path = entry_path(identity, text);
  std::string body(kMagic, sizeof(kMagic));
  put_string(body, identity);
  put_string(body, text);
  put_string(body, program);
  uint64_t checksum = fnv1a(body);
  body.append(reinterpret_cast<const char*>(&checksum), sizeof(checksum));
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid()) + "." + std::to_string(reinterpret_cast<uintptr_t>(&body));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return;  // read-only or missing directory: run without the disk tier
    f.write(body.data(), static_cast<std::streamsize>(body.size()));
    if (!f.good()) {
      f.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return;
  }
  keep_under_bound(body.size());
}

void discard(const std::string& identity, const std::string& text) {
  if (directory().empty()) return;
  std::error_code ec;
  fs::remove(entry_path(identity, text), ec);
}

}  // namespace torch_tpu::exec::disk_cache
