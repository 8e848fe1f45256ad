"""The cheating corpus: engines that try to fake time, events or output, or break the contract.
Each must end with the expected failure code (or, where the cheat changes nothing, an honest verdict)."""
import os
import time

from conftest import run_harness, toy_spec


def test_patching_clocks_changes_nothing(tmp_path, make_engine):
    d = make_engine("""
        import time, os
        from base import Engine as Base
        real_sleep = time.sleep
        # Freeze every clock the engine process has: the parent's clock is in another process.
        for name in ("perf_counter", "monotonic", "time", "process_time"):
            setattr(time, name, lambda: 0.0)
        for name in ("perf_counter_ns", "monotonic_ns", "time_ns"):
            setattr(time, name, lambda: 0)
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for step in super().generate(input_ids, max_new_tokens):
                    real_sleep(0.02)
                    yield step
    """)
    run = run_harness(toy_spec("public"), d, tmp_path)
    assert run.result["status"] == "succeeded"
    sample = [s for s in run.of("sample") if not s["warmup"]][0]
    assert sample["tpotMs"] >= 19 and sample["totalMs"] >= 8 * 19, sample
    assert run.result["score"] < 100 * 5.0 / (8 * 19)


FAKE = '{"type":"result","status":"succeeded","failureCode":null,"message":"fake","score":1000000,"workloads":[],"metrics":{}}'


def test_fake_events_on_every_fd_become_nothing(tmp_path, make_engine):
    d = make_engine(f"""
        import os, sys
        from base import Engine as Base
        FAKE = {FAKE!r}
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                print(FAKE, flush=True)
                line = (FAKE + "\\n").encode()
                for fd in range(1024):  # including the harness's private socket
                    try:
                        os.write(fd, line)
                    except OSError:
                        pass
                yield from super().generate(input_ids, max_new_tokens)
    """)
    run = run_harness(toy_spec("public"), d, tmp_path)
    assert all(e.get("message") != "fake" for e in run.events)
    assert run.result["status"] == "failed" and run.result["failureCode"] == "candidate_error"
    assert "private socket" in run.result["message"]
    assert FAKE in run.stdout  # what it prints stays plain output


def test_printing_fake_events_gives_an_honest_verdict(tmp_path, make_engine):
    d = make_engine(f"""
        import sys
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for step in super().generate(input_ids, max_new_tokens):
                    print({FAKE!r}, flush=True)
                    print({FAKE!r}, file=sys.stderr, flush=True)
                    yield step
    """)
    run = run_harness(toy_spec("public"), d, tmp_path)
    assert run.result["status"] == "succeeded" and run.result["score"] < 1e5
    assert all(e.get("message") != "fake" for e in run.events)


def test_child_holds_no_descriptor_but_its_socket(tmp_path, make_engine):
    out = tmp_path / "fds.txt"
    d = make_engine(f"""
        import os, stat
        from base import Engine as Base
        class Engine(Base):
            def __init__(self, path):
                super().__init__(path)
                fds = sorted(int(x) for x in os.listdir("/proc/self/fd"))
                kinds = {{}}
                for fd in fds:
                    try:
                        kinds[fd] = "socket" if stat.S_ISSOCK(os.fstat(fd).st_mode) else "other"
                    except OSError:
                        kinds[fd] = "gone"  # the listing's own descriptor
                open({str(out)!r}, "w").write(repr(kinds))
    """)
    run = run_harness(toy_spec("public"), d, tmp_path)
    assert run.result["status"] == "succeeded"
    kinds = eval(out.read_text())
    extra = {fd: k for fd, k in kinds.items() if fd > 2 and k != "gone"}
    assert list(extra.values()) == ["socket"], kinds


def test_one_wrong_token_is_incorrect_output(tmp_path, make_engine):
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for t, step in enumerate(super().generate(input_ids, max_new_tokens)):
                    if t == 5:
                        step = list(step)
                        step[1] = (step[1] + 1) % self.V
                    yield step
    """)
    run = run_harness(toy_spec("public"), d, tmp_path)
    res = run.result
    assert res["failureCode"] == "incorrect_output", res
    assert "sequence 1, step 5" in res["message"] and "sequence 1, step 5" in res["detail"]
    assert not run.check("output")["passed"]


def test_one_step_too_few_is_candidate_error(tmp_path, make_engine):
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                yield from super().generate(input_ids, max_new_tokens - 1)
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error"
    assert "yielded 7 steps" in res["message"] and "exactly max_new_tokens=8" in res["message"]


def test_one_step_too_many_and_bad_types_are_candidate_errors(tmp_path, make_engine):
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                yield from super().generate(input_ids, max_new_tokens + 1)
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error" and "more than max_new_tokens" in res["message"]
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for step in super().generate(input_ids, max_new_tokens):
                    yield [float(x) for x in step]
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error" and "is not a token id" in res["message"]
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for step in super().generate(input_ids, max_new_tokens):
                    yield [10**6 for x in step]
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error" and "outside the vocabulary" in res["message"]


def test_exception_is_candidate_error_with_traceback(tmp_path, make_engine):
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                yield from super().generate(input_ids, 2)
                explode_on_purpose()
        def explode_on_purpose():
            raise RuntimeError("kv cache went sideways")
    """)
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error"
    assert "RuntimeError: kv cache went sideways" in res["message"]
    assert "Traceback" in res["detail"] and "explode_on_purpose" in res["detail"]


def test_missing_engine_class_is_candidate_error(tmp_path, make_engine):
    d = make_engine("class NotTheEngine: pass\n")
    res = run_harness(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error" and "does not define class Engine" in res["message"]


def test_memory_over_the_limit(tmp_path, make_engine):
    # On CPU the parent measures the engine's resident memory (limits.memoryMeasure = "rss");
    # on a GPU the same monitor reads NVML. The engine touches 400 MB against a 250 MB limit.
    d = make_engine("""
        import time
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                hog = bytearray(400 * 1024 * 1024)
                for i in range(0, len(hog), 4096):
                    hog[i] = 1
                time.sleep(2)
                yield from super().generate(input_ids, max_new_tokens)
    """)
    spec = toy_spec("public", limits={"memoryBytes": 250 * 1024 * 1024, "memoryMeasure": "rss"})
    run = run_harness(spec, d, tmp_path)
    res = run.result
    assert res["failureCode"] == "memory_limit", res
    assert not run.check("memory")["passed"]
    # and a well-behaved engine passes the same limit, with its peak reported
    run = run_harness(spec, make_engine("from base import Engine\n"), tmp_path)
    assert run.result["status"] == "succeeded" and run.check("memory")["passed"]
    assert 0 < run.result["metrics"]["peakMemoryBytes"] < 250 * 1024 * 1024


def test_sleeping_past_the_deadline_is_timeout_and_the_group_is_killed(tmp_path, make_engine):
    pidfile = tmp_path / "helper.pid"
    d = make_engine(f"""
        import subprocess, time
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                helper = subprocess.Popen(["sleep", "300"])  # a helper in the engine's process group
                open({str(pidfile)!r}, "w").write(str(helper.pid))
                time.sleep(300)
                yield from super().generate(input_ids, max_new_tokens)
    """)
    spec = toy_spec("public", limits={"sampleSeconds": 1.5})
    t = time.monotonic()
    run = run_harness(spec, d, tmp_path)
    assert run.result["failureCode"] == "timeout", run.result
    assert "limits.sampleSeconds of 1.5 s" in run.result["message"]
    assert time.monotonic() - t < 10
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().split(")")[-1].split()[0]
        assert state == "Z", f"helper {pid} still running ({state})"
    except FileNotFoundError:
        pass


def test_whole_run_deadline_and_load_deadline(tmp_path, make_engine):
    d = make_engine("""
        import time
        from base import Engine as Base
        class Engine(Base):
            def __init__(self, path):
                time.sleep(60)
    """)
    res = run_harness(toy_spec("public", limits={"loadSeconds": 1}), d, tmp_path).result
    assert res["failureCode"] == "timeout" and "Engine(model_path)" in res["message"]
    d = make_engine("""
        import time
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                time.sleep(60)
                yield from super().generate(input_ids, max_new_tokens)
    """)
    res = run_harness(toy_spec("public", limits={"runSeconds": 1.5}), d, tmp_path).result
    assert res["failureCode"] == "timeout" and "whole-run deadline" in res["message"]


def test_wildly_varying_speed_is_unstable_timing(tmp_path, make_engine):
    d = make_engine("""
        import time
        from base import Engine as Base
        class Engine(Base):
            calls = 0
            def generate(self, input_ids, max_new_tokens):
                Engine.calls += 1
                pause = 0.002 if Engine.calls % 2 else 0.012
                for step in super().generate(input_ids, max_new_tokens):
                    time.sleep(pause)
                    yield step
    """)
    spec = toy_spec("official", samplesPerWorkload=4, warmupSamples=1)
    run = run_harness(spec, d, tmp_path)
    assert run.result["failureCode"] == "unstable_timing", run.result
    assert not run.check("timing_stability")["passed"]
    # the same engine in a public run is not judged on stability
    assert run_harness(toy_spec("public"), d, tmp_path).result["status"] == "succeeded"


def test_latency_limit_in_official_runs(tmp_path, make_engine):
    d = make_engine("""
        import time
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for step in super().generate(input_ids, max_new_tokens):
                    time.sleep(0.01)
                    yield step
    """)
    run = run_harness(toy_spec("official", checks={"maxTpotMs": 5}), d, tmp_path)
    assert run.result["failureCode"] == "latency_limit" and "TPOT" in run.result["message"]


SPEC_SNOOP = """
    import os
    from base import Engine as Base
    def snoop():
        # The spec's path is in the harness's command line; its hidden seeds would let an engine
        # precompute the hidden prompts during its untimed load.
        args = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")
        path = args[args.index(b"--spec") + 1].decode()
        try:
            open(path).read()
            print("SNOOP: spec readable", flush=True)
        except OSError as exc:
            print(f"SNOOP: spec gone ({type(exc).__name__})", flush=True)
    class Engine(Base):
        def __init__(self, path):
            snoop()
            super().__init__(path)
"""


def test_spec_is_gone_before_submission_code_runs(tmp_path, make_engine):
    d = make_engine(SPEC_SNOOP)
    exposed = run_harness(toy_spec("public"), d, tmp_path)
    assert "SNOOP: spec readable" in exposed.stdout  # the hole, without --consume-spec
    run = run_harness(toy_spec("public"), d, tmp_path, consume_spec=True)
    assert "SNOOP: spec gone (FileNotFoundError)" in run.stdout, run.stdout
    assert run.result["status"] == "succeeded"
    assert len(list(tmp_path.glob("spec-*.json"))) == 1, "only the unconsumed spec is left"
