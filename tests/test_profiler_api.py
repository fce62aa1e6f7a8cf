"""``ndgrad.profiler`` against ``torch.profiler``: the schedule's action sequence, the step cycle
(when ``on_trace_ready`` runs and which events each cycle holds), activities and their
warnings/errors, the Chrome trace and ``tensorboard_trace_handler`` files, start/stop/step."""

import gzip
import json
import os
import warnings

import pytest
import torch
import torch.profiler as TP

import ndgrad
import ndgrad.profiler as NP

LIBS = ((torch, TP, "aten::"), (ndgrad, NP, "ndgrad::"))

SCHEDULES = [
    dict(wait=1, warmup=1, active=2),
    dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
    dict(wait=2, warmup=0, active=1, repeat=3),
    dict(wait=0, warmup=1, active=3, repeat=1),
    dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1),
    dict(wait=0, warmup=0, active=1),
]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_actions_match_torch(kw):
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        ts = TP.schedule(**kw)
    with warnings.catch_warnings(record=True) as wn:
        warnings.simplefilter("always")
        ns = NP.schedule(**kw)
    assert [str(w.message) for w in wn] == [str(w.message) for w in wt]
    assert [ns(i).name for i in range(30)] == [ts(i).name for i in range(30)]
    assert [ns(i).value for i in range(30)] == [ts(i).value for i in range(30)]


@pytest.mark.parametrize("kw", [dict(wait=0, warmup=0, active=0), dict(wait=-1, warmup=1,
                                active=1), dict(wait=1, warmup=1, active=1, repeat=-1)])
def test_schedule_bad_arguments_raise_like_torch(kw):
    msgs = []
    for _, P, _ in LIBS:
        with pytest.raises(AssertionError) as e:
            P.schedule(**kw)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    for _, P, _ in LIBS:
        with pytest.raises(AssertionError, match="Step must be non-negative"):
            P.schedule(wait=0, warmup=1, active=1)(-1)


def test_enums_and_supported_activities():
    for name, member in TP.ProfilerActivity.__members__.items():
        assert NP.ProfilerActivity[name].value == int(member.value)
    assert [(m, v.value) for m, v in NP.ProfilerAction.__members__.items()] == \
        [(m, v.value) for m, v in TP.ProfilerAction.__members__.items()]
    assert {a.name for a in NP.supported_activities()} == \
        {a.name for a in TP.supported_activities()} == {"CPU"}
    assert repr(NP.ProfilerAction.RECORD) == repr(TP.ProfilerAction.RECORD)
    assert NP.kineto_available() is True
    assert NP.record_function is ndgrad.autograd.profiler.record_function


def _cycles(L, P, prefix, steps, acc=False, **kw):
    """Run ``steps`` steps of ``x * i``; return what each on_trace_ready saw and the final
    events (op names without prefix, ProfilerStep kept)."""
    def names(evs):
        out = []
        for e in evs:
            if e.name == "ProfilerStep*" or e.name == "mine":
                out.append(e.name)
            elif e.name in (prefix + "mul", prefix + "add"):
                out.append(e.name[len(prefix):])
        return sorted(out)

    seen = []
    x = L.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with P.profile(schedule=P.schedule(**kw), acc_events=acc,
                       on_trace_ready=lambda p: seen.append((p.step_num, names(p.events())))
                       ) as prof:
            for i in range(steps):
                with P.record_function("mine"):
                    x * i
                x + i
                prof.step()
    return seen, names(prof.events())


@pytest.mark.parametrize("kw", SCHEDULES[:5])
@pytest.mark.parametrize("acc", [False, True])
def test_step_cycles_and_trace_ready_match_torch(kw, acc):
    got = [_cycles(*lib, steps=9, acc=acc, **kw) for lib in LIBS]
    assert got[1] == got[0]


def test_no_schedule_records_everything_without_step_ranges():
    def run(L, P, prefix):
        x = L.ones(2, 3, requires_grad=True)
        with P.profile(activities=[P.ProfilerActivity.CPU], record_shapes=True,
                       profile_memory=True, with_stack=True, with_flops=True,
                       with_modules=True) as prof:
            (x * 2).sum().backward()
        keys = {e.key for e in prof.key_averages()}
        shapes = {(e.key, str(e.input_shapes))
                  for e in prof.key_averages(group_by_input_shape=True)
                  if e.key == prefix + "mul"}
        return ("MulBackward0" in keys, any(k.startswith("ProfilerStep") for k in keys),
                {(k.replace(prefix, ""), s) for k, s in shapes})

    assert run(*LIBS[1]) == run(*LIBS[0]) == (True, False, {("mul", "[[2, 3], []]")})


def test_table_sort_and_row_limit():
    x = ndgrad.ones(4)
    with NP.profile() as prof:
        for _ in range(3):
            (x * 2 + 1).exp()
    ka = prof.key_averages()
    table = ka.table(sort_by="cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    rows = lines[3:-2]
    assert len(rows) == 2 and all(r.split()[-1] == "3" for r in rows)
    assert lines[-1].startswith("Self CPU time total:")
    top = max(ka, key=lambda e: e.cpu_time_total)
    assert rows[0].split()[0] == top.key


def test_cuda_activity_on_a_cpu_build_warns_and_cuda_alone_fails():
    for L, P, prefix in LIBS:
        with pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
            with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]) as p:
                L.ones(2) * 2
        assert prefix + "mul" in {e.key for e in p.key_averages()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(AssertionError, match="No activities specified for the profiler"):
                with P.profile(activities=[P.ProfilerActivity.CUDA]):
                    pass
        for bad in ([], ["cpu"]):
            with pytest.raises(AssertionError, match="No valid profiler activities found"):
                P.profile(activities=bad)
        with pytest.warns(FutureWarning, match="`use_cuda` is deprecated"):
            P.profile(use_cuda=False)


def test_results_before_start_raise_like_torch():
    for _, P, _ in LIBS:
        p = P.profile()
        with pytest.raises(AssertionError, match="initialized before getting key averages"):
            p.key_averages()
        with pytest.raises(AssertionError, match="initialized before accessing events"):
            p.events()
        with pytest.raises(AssertionError, match="initialized before exporting chrome trace"):
            p.export_chrome_trace("unused.json")


def test_start_step_stop_without_context_manager():
    def run(L, P, prefix):
        p = P.profile(schedule=P.schedule(wait=0, warmup=1, active=1, repeat=1))
        p.start()
        during = len(p.events())
        for i in range(3):
            L.ones(2) * i
            p.step()
        p.stop()
        return during, p.step_num, p.current_action.name, sorted(
            e.key.replace(prefix, "") for e in p.key_averages() if e.key in
            ("ProfilerStep*", prefix + "mul"))

    assert run(*LIBS[1]) == run(*LIBS[0])


def test_tensorboard_trace_handler_writes_one_trace_per_cycle(tmp_path):
    def run(L, P, sub, gz):
        d = tmp_path / sub
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with P.profile(schedule=P.schedule(wait=0, warmup=1, active=2),
                           on_trace_ready=P.tensorboard_trace_handler(str(d), "w", gz)) as p:
                for i in range(7):
                    L.ones(2) * i
                    p.step()
        files = sorted(os.listdir(d))
        traces = []
        for f in files:
            opener = gzip.open if f.endswith(".gz") else open
            with opener(d / f, "rt") as fh:
                traces.append(json.load(fh))
        steps = [sorted(e["name"] for e in t["traceEvents"]
                        if e.get("ph") == "X" and e["name"].startswith("ProfilerStep"))
                 for t in traces]
        return [f.split(".")[0] for f in files], [f.endswith(".gz") for f in files], \
            sorted(steps)

    for gz in (False, True):
        assert run(ndgrad, NP, f"n{gz}", gz) == run(torch, TP, f"t{gz}", gz)
    got = run(ndgrad, NP, "x", False)
    assert got[2] == [["ProfilerStep#1", "ProfilerStep#2"], ["ProfilerStep#4", "ProfilerStep#5"],
                      ["ProfilerStep#7"]]


def test_export_chrome_trace_events(tmp_path):
    path = str(tmp_path / "t.json")
    with NP.profile(schedule=NP.schedule(wait=0, warmup=1, active=1, repeat=1)) as p:
        for i in range(2):
            ndgrad.ones(2) * i
            p.step()
    p.export_chrome_trace(path)
    with open(path) as f:
        evs = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in evs] == ["ProfilerStep#1", "ndgrad::mul"]
    assert evs[0]["cat"] == "user_annotation" and evs[1]["dur"] >= 0
    assert [e.name for e in p.events()] == ["ProfilerStep*", "ndgrad::mul"]


def test_schedule_returning_device_stopped_is_rejected():
    for _, P, _ in LIBS:
        with pytest.raises(ValueError, match="DEVICE_STOPPED is set internally"):
            P.profile(schedule=lambda s, P=P: P.ProfilerAction.DEVICE_STOPPED)


def test_ndgrad_profiler_is_an_attribute():
    assert ndgrad.profiler is NP
