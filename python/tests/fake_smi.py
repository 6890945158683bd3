"""A stand-in `nvidia-smi` (written to a temp dir on PATH): answers the queries the sampler makes with
readings of FAKE_SMI_GPUS GPUs, in nvidia-smi's csv,noheader,nounits output."""

import os
import stat
import sys
import textwrap

SCRIPT = textwrap.dedent('''\
    #!{python}
    import os, sys, time
    n = int(os.environ.get("FAKE_SMI_GPUS", "2"))
    args = " ".join(sys.argv[1:])
    log = os.environ.get("FAKE_SMI_LOG")
    if log:
        with open(log, "a") as f:
            f.write(args + "\\n")
    if n == 0:
        sys.stderr.write("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\\n")
        sys.exit(9)
    def rows():
        for i in range(n):
            util = (10 + 20 * i) % 101
            power = "[N/A]" if i == 3 else "%.2f" % (300 + i + 0.52)
            print("%d, GPU-%08d-fake, %d, %d, %s" % (i, i, util, 40000 + i, power), flush=True)
    def capture(fn):
        import contextlib, io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fn()
        return out.getvalue().splitlines()
    if "--query-compute-apps" in args:
        for i in range(n):
            print("GPU-%08d-fake, %d, sglang::scheduler, %d" % (i, 4000 + i, 30000 + i))
            print("GPU-%08d-fake, %d, [N/A], %d" % (i, 5000 + i, 100))
        sys.exit(0)
    if "-lms" in sys.argv:
        ms = int(sys.argv[sys.argv.index("-lms") + 1])
        limit = int(os.environ.get("FAKE_SMI_DIE_AFTER", "0"))
        hang = int(os.environ.get("FAKE_SMI_HANG_AFTER", "0"))
        lost = os.environ.get("FAKE_SMI_LOST")
        k = 0
        while True:
            if hang and k >= hang:
                # stuck in the driver: alive, printing nothing
                while True:
                    time.sleep(60)
            if lost and k >= 2:
                # a GPU fell off the bus: its row is replaced by the line nvidia-smi prints for it
                gpu, form = lost.split(":")
                for line in [l for l in capture(rows) if not l.startswith(gpu + ",")]:
                    print(line, flush=True)
                name = "GPU%s: 0000:3B:00.0" % gpu if form == "index" else "GPU0000:3B:00.0"
                print("Unable to determine the device handle for %s: Unknown Error" % name, flush=True)
            else:
                rows()
            k += 1
            if limit and k >= limit:
                sys.exit(1)
            time.sleep(ms / 1000.0)
    rows()
''')


def install(directory, gpus=2, die_after=0, log=None, hang_after=0, lost=None):
    """Writes `nvidia-smi` into `directory`; returns the env to run with it first on PATH. The ``-lms`` child exits
    after ``die_after`` ticks, or stops printing (alive) after ``hang_after``; ``lost="1:index"`` (or ``"1:bus"``)
    makes GPU 1 fall off the bus after two ticks, its row replaced by nvidia-smi's error line naming its index (or
    only its PCI bus id)."""
    path = os.path.join(directory, "nvidia-smi")
    with open(path, "w") as f:
        f.write(SCRIPT.format(python=sys.executable))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env = {"PATH": directory + os.pathsep + os.environ.get("PATH", ""), "FAKE_SMI_GPUS": str(gpus), "FAKE_SMI_DIE_AFTER": str(die_after)}
    if log:
        env["FAKE_SMI_LOG"] = log
    env["FAKE_SMI_HANG_AFTER"] = str(hang_after)
    env["FAKE_SMI_LOST"] = lost or ""
    return env
