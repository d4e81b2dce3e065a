"""The sweep runner: a grid, resumed after being killed without redoing finished points, a
crashed point reported while the others finish, and a small real ns-3 sweep with its plot."""

import csv
import json
import os
import signal
import subprocess
import sys

import cnuas.sweep

HERE = os.path.dirname(os.path.abspath(__file__))


def sweep_command(out, *extra):
    return [sys.executable, "-m", "cnuas.sweep", "-o", str(out), "--no-plots",
            "--target", "sweep_points:square"] + list(extra)


def environment():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + env.get("PYTHONPATH", "").split(os.pathsep))
    return env


def table(out):
    with open(os.path.join(out, "results.csv")) as f:
        return list(csv.DictReader(f))


def test_resumes_after_being_killed_without_redoing_finished_points(tmp_path):
    out = tmp_path / "sweep"
    markers = tmp_path / "markers"
    markers.mkdir()
    xs = list(range(12))
    command = sweep_command(out, "-j", "1", "--grid", "x=" + ",".join(map(str, xs)),
                            "--fixed", f"marker_dir={markers}", "--fixed", "pause=0.2")
    first = subprocess.Popen(command, env=environment(), stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    points = out / "points"
    # Kill the whole sweep (runner and worker) once a few points are on disk.
    for line in first.stderr:
        if "3/12 done" in line:
            break
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    finished = {p: (points / p).read_text() for p in os.listdir(points) if p.endswith(".json")}
    assert 3 <= len(finished) < len(xs), "the kill should land in the middle of the grid"
    ran_before = set(os.listdir(markers))

    second = subprocess.run(command, env=environment(), capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert f"{len(finished)} already finished" in second.stderr
    # The points finished before the kill were neither run again nor rewritten.
    for name, text in finished.items():
        assert (points / name).read_text() == text
    ran_after = set(os.listdir(markers)) - ran_before
    x_of = lambda marker: int(marker.split("-")[1])
    finished_x = {json.loads(t)["point"]["x"] for t in finished.values()}
    assert not finished_x & {x_of(m) for m in ran_after}
    # The table is complete: every x once, each with its result.
    rows = table(out)
    assert sorted(int(r["x"]) for r in rows) == xs
    assert all(r["status"] == "ok" and float(r["y"]) == int(r["x"]) ** 2 for r in rows)


def test_a_crashing_point_does_not_lose_the_others(tmp_path):
    out = tmp_path / "sweep"
    done = subprocess.run(sweep_command(out, "-j", "2", "--grid", "x=1,2,3,4,raise",
                                        "--fixed", "crash_at=3"),
                          env=environment(), capture_output=True, text=True)
    assert done.returncode == 1  # some points failed
    rows = {r["x"]: r for r in table(out)}
    assert set(rows) == {"1", "2", "3", "4", "raise"}
    assert rows["3"]["status"] == "error"
    assert "SIGSEGV" in rows["3"]["error"]
    assert rows["raise"]["status"] == "error"
    assert "ValueError: this point's parameters are wrong" in rows["raise"]["error"]
    for x in ("1", "2", "4"):
        assert rows[x]["status"] == "ok" and float(rows[x]["y"]) == int(x) ** 2
    assert "SIGSEGV" in done.stderr


def test_a_small_real_sweep_writes_table_and_plot(tmp_path):
    spec = tmp_path / "kmax.toml"
    spec.write_text("""
[fixed]
topology = "star:hosts=5"
rate = "10Gbps"
senders = 4
size = "100KB"
limit = "5ms"
[grid]
kmax = ["20KB", "80KB"]
[plot]
x = "kmax"
y = ["fct_p99_us"]
""")
    out = tmp_path / "sweep"
    assert cnuas.sweep.main([str(spec), "-o", str(out), "-j", "2"]) == 0
    rows = table(out)
    assert [r["kmax"] for r in rows] == ["20KB", "80KB"]
    assert all(r["status"] == "ok" and int(float(r["flows_done"])) == 4 for r in rows)
    assert (out / "plots" / "fct_p99_us-vs-kmax.png").stat().st_size > 1000
