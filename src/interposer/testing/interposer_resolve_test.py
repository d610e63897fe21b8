"""How programs find the driver's entry points under LD_PRELOAD: cuGetProcAddress hands each
caller the hook of the revision it asked for, and dlsym(RTLD_NEXT) keeps glibc's meaning."""
import os
import unittest

from preload_support import LIB, PreloadTest

NEXT_A = os.environ["CARVE_NEXT_A"]
NEXT_B = os.environ["CARVE_NEXT_B"]

# (CUDA version of the caller, base name, the export it must get, per-thread default stream)
REVISIONS = [
    (11080, "cuGetProcAddress", "cuGetProcAddress", False),  # CUDA 11.3-11.8: four arguments
    (12000, "cuGetProcAddress", "cuGetProcAddress_v2", False),
    (13000, "cuMemAlloc", "cuMemAlloc_v2", False),
    (13000, "cuMemAllocAsync", "cuMemAllocAsync_ptsz", True),
    (13000, "cuLaunchKernel", "cuLaunchKernel", False),
    (13000, "cuLaunchKernel", "cuLaunchKernel_ptsz", True),
    (11080, "cuGraphInstantiate", "cuGraphInstantiate_v2", False),
    (12000, "cuGraphInstantiate", "cuGraphInstantiateWithFlags", False),
    (12040, "cuGraphAddNode", "cuGraphAddNode_v2", False),
]


class ResolveTest(PreloadTest):
    def test_cu_get_proc_address_hands_each_caller_the_hook_of_its_revision(self):
        ledger = self.ledger(1 << 20)
        # A driver may hand out internal entry points rather than its exports: then the
        # interposer must recognise the symbol by name and the caller's version.
        for internal in [False, True]:
            extra = {"CARVE_FAKE_PROC_INTERNAL": "1"} if internal else {}
            for version, base, export, ptsz in REVISIONS:
                with self.subTest(internal=internal, base=base, version=version, ptsz=ptsz):
                    args = ["identity", str(version), base, export] + (["ptsz"] if ptsz else [])
                    r = self.probe(self.env(ledger, **extra), "direct", *args)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_rtld_next_from_a_library_loaded_after_the_interposer_finds_the_next_definition(self):
        env = self.env(self.ledger(1 << 20), LD_PRELOAD=f"{LIB}:{NEXT_A}:{NEXT_B}")
        r = self.probe(env, "direct", "rtld-next")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "next=2")  # libcarve_next_b's, not next_a's own

    def test_a_hooked_name_found_with_dlsym_is_the_hook(self):
        r = self.probe(self.env(self.ledger(1_000_000)), "dlsym", "exact", "1000000")
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
