from tileport.gpu import hostbench as HB


def test_fit_line_recovers_a_line_and_needs_two_x():
    a, b = HB.fit_line([2, 3, 7], [10.0, 12.5, 22.5])
    assert abs(a - 5.0) < 1e-9 and abs(b - 2.5) < 1e-9
    assert HB.fit_line([7, 7], [1.0, 2.0]) is None


def test_per_call_runs_n_calls_between_two_syncs():
    log = []
    us = HB.per_call(lambda: log.append("c"), 5, lambda: log.append("s"))
    assert log == ["s"] + ["c"] * 5 + ["s"] and us >= 0


def test_line_has_every_column_and_nan_for_a_library_without_tp_py_call():
    row = dict(op="tg_relu", kernel="_relu_fwd_kernel", arrays=2, dims=2, scalars=0, constexprs=2,
               ref=10.5, port=9.5, pyport=12.0, rs=float("nan"), capi=float("nan"), py=3.0, native=4.0,
               ctypes=0.1)
    text = HB.line(row)
    assert len(text.split()) == len(HB.HEAD.split()) and text.split()[-5:] == ["-1.00", "1.50", "nan", "nan", "-"]
