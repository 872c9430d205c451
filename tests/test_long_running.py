"""A process may run any number of distinct programs: the memory tier of the
compilation cache is bounded by the memory mappings its programs hold."""
from conftest import run_python

_MANY_PROGRAMS = r"""
import torch, torch_tpu

def mappings():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)

def compiles():
    return torch_tpu.metrics()["compiles"] + torch_tpu.metrics()["disk_cache_hits"]

x = torch.arange(4096.0).tpu()
(x[:1] * 3).cpu()
# As if the kernel allowed about 1000 mappings more than the process holds
# now: programs (3 mappings each here) are evicted past about 600 of them.
limit = (mappings() + 600) * 8 // 3
torch_tpu._C._set_memory_mapping_limit(limit)
most = most_cached = 0
for n in range(2, 2602):  # 2600 distinct programs, more than the old count bound of 2048
    assert torch.equal((x[:n] * 3).cpu(), torch.arange(float(n)) * 3), n
    if n % 25 == 0:
        most = max(most, mappings())
        most_cached = max(most_cached, torch_tpu.metrics()["cached_programs"])
cached = torch_tpu.metrics()["cached_programs"]
before = compiles()
(x[:2601] * 5).cpu()  # the most recent program is still loaded
recent_reloaded = compiles() - before
assert torch.equal((x[:2] * 3).cpu(), torch.tensor([0.0, 3.0]))  # an evicted one loads again
print(limit, most, most_cached, cached, recent_reloaded, compiles() - before)
"""


def test_thousands_of_programs_keep_the_mapping_count_bounded():
    r = run_python(_MANY_PROGRAMS, timeout=600, TORCH_TPU_CACHE_DIR="")
    assert r.returncode == 0, r.stderr[-3000:]
    limit, most, most_cached, cached, recent_reloaded, evicted_reloaded = map(int, r.stdout.split())
    assert most <= limit // 2 + 100  # measured every few loads: at most a few loads past the bound
    # Programs were evicted, more than once: of the 2600 loaded, never half were held.
    assert 0 < cached <= most_cached < 2600 // 2
    assert recent_reloaded == 0 and evicted_reloaded == 1


_NO_ROOM = r"""
import torch, torch_tpu

def mappings():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)

x = torch.arange(64.0).tpu()
(x * 2).cpu()
previous = torch_tpu._C._set_memory_mapping_limit(mappings())
try:
    (x[:7] * 2).cpu()
except RuntimeError as e:
    print("raised:", str(e).splitlines()[0])
torch_tpu._C._set_memory_mapping_limit(previous)
assert torch.equal((x[:7] * 2).cpu(), torch.arange(7.0) * 2)  # nothing was lost
print("ok")
"""


def test_no_room_for_a_program_is_a_clear_error():
    r = run_python(_NO_ROOM, TORCH_TPU_CACHE_DIR="")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "raised: tpu: cannot load another program" in r.stdout
    assert "vm.max_map_count" in r.stdout and r.stdout.strip().endswith("ok")
