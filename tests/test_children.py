"""Ending a run's processes (labkit.lab.running.children): every process below, however
deep, is found and ended. A driver process stands in for the run, so that the test's own
children (other tests' servers and kernels) are never touched."""
import json
import subprocess
import sys
import textwrap

import psutil

DRIVER = textwrap.dedent('''\
    import json, os, subprocess, sys, time
    from labkit.lab.running import children
    # a kernel and the worker it starts: the worker is not the driver's child
    kernel = subprocess.Popen([sys.executable, "-c",
                               "import subprocess, time; subprocess.Popen(['sleep', '600']); "
                               "time.sleep(600)"])
    while not children.descendants(kernel.pid):
        time.sleep(0.01)
    print(json.dumps({"kernel": kernel.pid, "below": children.descendants(os.getpid()),
                      "ended": children.kill_children()}))
    ''')


def test_kill_children_ends_every_process_below_however_deep():
    run = subprocess.run([sys.executable, "-c", DRIVER], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["kernel"] in out["below"] and len(out["below"]) == 2 and out["ended"] == 2
    for pid in out["below"]:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", pid


def test_descendants_of_a_process_that_is_gone_are_none():
    from labkit.lab.running import children

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert children.descendants(gone.pid) == []
