"""attribute_kernels over synthetic kineto Chrome traces (no torch, no GPU)."""
from tileport.gpu.cupti import attribute_kernels


def ann(name, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur}


def launch(corr, ts, cat="cuda_runtime", name="cudaLaunchKernel"):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": 3, "args": {"correlation": corr}}


def kernel(corr, name, dur, ts=10_000):
    # the kernel's *GPU* timestamp is deliberately unrelated to the annotation ranges
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}


def trace(*events):
    return {"traceEvents": list(events)}


def test_kernel_attributed_by_launch_time_not_gpu_time():
    by, lost = attribute_kernels(trace(
        ann("tp|ref|0", 100, 50),
        ann("tp|port|0", 200, 50),
        launch(1, 120),
        launch(2, 210, cat="cuda_driver", name="cuLaunchKernel"),
        # GPU times run late and in reverse order: the port's kernel lies before the ref's
        kernel(1, "ref_k", 5.5, ts=900),
        kernel(2, "port_k", 4.0, ts=800),
    ))
    assert by == {"tp|ref|0": [("ref_k", 5.5)], "tp|port|0": [("port_k", 4.0)]}
    assert lost == []


def test_same_kernel_name_in_two_annotations_kept_apart():
    by, lost = attribute_kernels(trace(
        ann("tp|ref|0", 0, 10),
        ann("tp|ref|1", 20, 10),
        launch(7, 25), launch(3, 5),
        kernel(7, "softmax", 2.0), kernel(3, "softmax", 1.0),
    ))
    assert by == {"tp|ref|0": [("softmax", 1.0)], "tp|ref|1": [("softmax", 2.0)]}
    assert lost == []


def test_several_kernels_of_one_call_all_counted():
    by, _ = attribute_kernels(trace(
        ann("tp|torch|0", 0, 100),
        launch(1, 10), launch(2, 20), launch(3, 30),
        kernel(1, "a", 1.0), kernel(2, "b", 2.0), kernel(3, "c", 3.0),
    ))
    assert sorted(by["tp|torch|0"]) == [("a", 1.0), ("b", 2.0), ("c", 3.0)]


def test_launch_outside_annotations_is_unattributed():
    # the L2 flush (memset) is launched between the annotations
    by, lost = attribute_kernels(trace(
        ann("tp|ref|0", 100, 50),
        ann("tp|port|0", 200, 50),
        launch(1, 90), launch(2, 120), launch(3, 175), launch(4, 260),
        kernel(1, "flush", 30.0), kernel(2, "ref_k", 1.0),
        kernel(3, "flush", 30.0), kernel(4, "flush", 30.0),
    ))
    assert by == {"tp|ref|0": [("ref_k", 1.0)], "tp|port|0": []}
    assert sorted(lost) == ["flush", "flush", "flush"]


def test_annotation_range_is_inclusive_at_both_ends():
    by, lost = attribute_kernels(trace(
        ann("tp|ref|0", 100, 50),
        launch(1, 100), launch(2, 150), launch(3, 151), launch(4, 99),
        kernel(1, "start", 1.0), kernel(2, "end", 1.0), kernel(3, "after", 1.0), kernel(4, "before", 1.0),
    ))
    assert by == {"tp|ref|0": [("start", 1.0), ("end", 1.0)]}
    assert sorted(lost) == ["after", "before"]


def test_annotation_that_launched_nothing_is_listed_empty():
    by, lost = attribute_kernels(trace(ann("tp|port|3", 0, 10), ann("tp|ref|3", 20, 10), launch(1, 25),
                                       kernel(1, "k", 1.0)))
    assert by == {"tp|port|3": [], "tp|ref|3": [("k", 1.0)]}
    assert lost == []


def test_kernel_without_matching_launch_is_unattributed():
    by, lost = attribute_kernels(trace(
        ann("tp|ref|0", 0, 100),
        launch(1, 50),
        kernel(1, "seen", 1.0),
        kernel(99, "orphan", 1.0),                                   # no launch with correlation 99
        {"cat": "kernel", "name": "no_args", "ts": 0, "dur": 1.0},   # no correlation at all
    ))
    assert by == {"tp|ref|0": [("seen", 1.0)]}
    assert sorted(lost) == ["no_args", "orphan"]


def test_launch_events_of_other_categories_are_not_launches():
    # a cpu_op carrying a correlation id inside the annotation must not attribute the kernel
    by, lost = attribute_kernels(trace(
        ann("tp|ref|0", 0, 100),
        {"cat": "cpu_op", "name": "aten::add", "ts": 50, "dur": 1, "args": {"correlation": 5}},
        kernel(5, "k", 1.0),
    ))
    assert by == {"tp|ref|0": []}
    assert lost == ["k"]


def test_non_tp_annotations_are_ignored():
    by, lost = attribute_kernels(trace(
        ann("ProfilerStep#1", 0, 1000),
        ann("other|ref|0", 0, 1000),
        ann("tp|ref|0", 100, 10),
        launch(1, 105),   # inside tp|ref|0 (and inside the wide non-tp annotations)
        launch(2, 500),   # only inside the non-tp annotations
        kernel(1, "mine", 1.0), kernel(2, "theirs", 2.0),
    ))
    assert by == {"tp|ref|0": [("mine", 1.0)]}
    assert lost == ["theirs"]


def test_tp_prefixed_event_of_other_category_is_not_an_annotation():
    by, lost = attribute_kernels(trace(
        {"cat": "cpu_op", "name": "tp|ref|0", "ts": 0, "dur": 100},
        launch(1, 50), kernel(1, "k", 1.0),
    ))
    assert by == {}
    assert lost == ["k"]


def test_durations_are_floats_and_missing_dur_is_zero():
    by, _ = attribute_kernels(trace(
        ann("tp|ref|0", 0, 100),
        launch(1, 10), launch(2, 20),
        kernel(1, "a", 3),
        {"cat": "kernel", "name": "b", "ts": 0, "args": {"correlation": 2}},
    ))
    assert by["tp|ref|0"] == [("a", 3.0), ("b", 0.0)]
    assert all(isinstance(d, float) for _, d in by["tp|ref|0"])


def test_empty_trace():
    assert attribute_kernels({"traceEvents": []}) == ({}, [])
    assert attribute_kernels({}) == ({}, [])


def test_bare_event_list_accepted():
    by, lost = attribute_kernels([ann("tp|ref|0", 0, 10), launch(1, 5), kernel(1, "k", 2.0)])
    assert by == {"tp|ref|0": [("k", 2.0)]} and lost == []


def test_many_annotations_each_gets_its_own_kernels():
    # interleaved rounds as cupti.profile records them: ref, port, torch per round
    events, expect = [], {}
    corr = 0
    for r in range(5):
        for j, side in enumerate(("ref", "port", "torch")):
            t0 = 1000 * r + 100 * j
            name = f"tp|{side}|{r}"
            events.append(ann(name, t0, 50))
            expect[name] = []
            for n in range(j + 1):                      # side j launches j+1 kernels
                corr += 1
                events += [launch(corr, t0 + 10 + n), kernel(corr, f"{side}_{n}", float(r + n))]
                expect[name].append((f"{side}_{n}", float(r + n)))
            corr += 1                                   # an L2 flush between the calls
            events += [launch(corr, t0 + 70), kernel(corr, "flush", 99.0)]
    by, lost = attribute_kernels({"traceEvents": events})
    assert by == expect
    assert lost == ["flush"] * 15
