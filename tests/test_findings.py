"""'What this run shows' (labkit.lab.analysis.findings): a place held at a notebook's top
and filled from its run."""
import pandas as pd

from labkit.lab.analysis import findings


def test_the_verdicts_sentence_gives_each_claims_verdict_with_its_value():
    t = pd.DataFrame([{"claim_id": "C000.2", "verdict": "contradicted",
                       "measured_value": "1 [0.96, 1.04]"},
                      {"claim_id": "C000.2a", "verdict": "in-between",
                       "measured_value": "1.03 [1.01, 1.05]"}])
    assert findings.verdicts_sentence(t) == (
        "Verdicts: C000.2 contradicted (1 [0.96, 1.04]); C000.2a in-between "
        "(1.03 [1.01, 1.05]).")
    assert findings.verdicts_sentence(t.iloc[:0]) == "This notebook judges no claim."


def test_outside_a_kernel_fill_prints_the_sentences_and_drops_empty_ones(capsys):
    findings.placeholder("01_stack_size")
    said = findings.fill("01_stack_size", ["One.", "", "Two."])
    assert said == ["One.", "Two."]
    assert capsys.readouterr().out == "What this run shows:\n- One.\n- Two.\n"


def test_the_held_place_and_its_filling_share_one_display_id():
    assert findings._id("08_switch_frequency") == "08_switch_frequency-what-this-run-shows"
    page = findings._html(["A <b> & c."])
    assert "&lt;b&gt; &amp; c." in page and "What this run shows" in page


def _timed(entry, build, times):
    return pd.DataFrame({"entry": entry, "build": build, "ns_per_switch": times})


def test_the_builds_finding_gives_each_kernels_O0_over_O2_beside_the_article():
    from labkit.lab.analysis import optimisation_levels as ol

    timed = pd.concat([_timed("boost_fiber", "O0", [100.0, 101, 99, 100, 102]),
                       _timed("boost_fiber", "O2", [20.0, 20, 21, 19, 20]),
                       _timed("asm_fpu", "O0", [4.0, 4, 4.1, 3.9, 4]),
                       _timed("asm_fpu", "O2", [4.0, 4, 4.1, 3.9, 4])])
    said = ol.finding(timed, ["boost_fiber", "asm_fpu"])
    assert "boost_fiber 5x [" in said and "(100 ns against 20 ns)" in said
    assert "asm_fpu 1x [" in said
    assert said.endswith("The article saw 7.2x for Boost's fiber.")  # C000.3, claims.csv
    assert ol.finding(timed[timed.build == "O0"], ["asm_fpu"]).startswith("No kernel")
    counts = pd.DataFrame({"entry": ["boost_fiber", "boost_fiber"], "build": ["O0", "O2"],
                           "net": [300.0, 40.0], "why": ["", ""]})
    assert ol.instructions_finding(counts, ["boost_fiber", "asm_fpu"]) == (
        "Instructions per switch from -O0 to -O2 (callgrind): boost_fiber 300 -> 40.")
    assert ol.instructions_finding(counts.iloc[:0], ["boost_fiber"]) == ""


def test_the_kernel_switch_findings_read_the_right_ratios_beside_the_articles():
    from labkit.lab.analysis import kernel_switches as ks

    def rows(task, placement, times):
        return pd.DataFrame({"task": task, "placement": placement, "ns_per_switch": times})

    h = pd.concat([rows("asm", "same-cpu", [2.0, 2, 2.1, 1.9, 2]),
                   rows("thread_futex", "same-cpu", [2000.0, 2000, 2100, 1900, 2000]),
                   rows("thread_futex", "cross-cpu", [9e4] * 5),
                   rows("thread_pipe", "same-cpu", [1000.0, 1000, 1050, 950, 1000]),
                   rows("process_pipe", "same-cpu", [3000.0, 3000, 3100, 2900, 3000])])
    said = ks.oneway_finding(h)
    assert said.startswith("On this machine an OS thread's hand-off on one CPU costs 1,000x [")
    assert "(2 us against 2 ns; the article said about 1000x)" in said  # C001.4
    assert "a process's pipe hand-off costs 3x [" in said and "the article said 2.5x" in said
    assert ks.oneway_finding(h[h.placement == "cross-cpu"]).startswith("No hand-off")
    y = pd.DataFrame({"every": [0] * 5 + [1] * 5,
                      "units_per_s": [1000.0, 1000, 1010, 990, 1000, 400, 400, 404, 396, 400]})
    said = ks.yield_finding(y)
    assert said.startswith("Yielding after every unit keeps 40% [") and said.endswith(
        "the article kept 29%.")  # C002.2's 0.29
    assert ks.yield_finding(y[y.every == 0]).startswith("This run did not")


def test_a_ratio_is_said_with_its_interval_in_three_figures():
    assert findings.times(5.234, 4.9, 5.61) == "5.23x [4.9, 5.61]"
    assert findings.times(1234.5, 1100.2, 1300) == "1,234x [1,100, 1,300]"
    assert findings.times(2.0, float("-inf"), float("inf")) == "2x"
    assert findings.times(float("nan")) == "n/a"


def test_a_title_wraps_each_line_and_keeps_the_breaks():
    import matplotlib.pyplot as plt

    fig = findings.title(plt.figure(), "a " * 80 + "\nsecond line", 60)
    lines = fig._suptitle.get_text().split("\n")
    assert lines[-1] == "second line" and len(lines) == 4
    assert all(len(line) <= 60 for line in lines)
    plt.close(fig)


def test_the_echo_findings_pick_the_right_servers_and_ends():
    from labkit.lab.analysis import echo_servers as es

    ms = pd.DataFrame({"server": ["cxx20_new", "callback_epoll", "cxx20_pool_sym", "asio"],
                       "median": [100e3, 120e3, 130e3, 90e3], "q1": [95e3, 118e3, 128e3, 80e3],
                       "q3": [105e3, 122e3, 133e3, 91e3]})
    said = es.table_finding(ms)
    assert said.startswith("Requests per second here: fastest cxx20_pool_sym 130k (quartiles "
                           "128k to 133k), slowest asio 90k (quartiles 80k to 91k).")
    assert said.endswith("had 138k > 125k > 108k; here 130k, 120k, 100k.")  # C001.1
    assert "article" not in es.table_finding(ms[ms.server != "cxx20_new"])
    by = pd.DataFrame({"server": ["a", "a", "b", "b"], "connections": [1, 64, 1, 64],
                       "median": [10e3, 50e3, 20e3, 30e3]})
    assert es.connections_finding(by) == (
        "From 1 to 64 connections, throughput changes 1.5x (b) to 5x (a); at 64, a serves "
        "the most (50k requests/s).")
    middle = pd.DataFrame({"server": ["a", "b"], "connections": [8, 8], "median": [90e3, 60e3]})
    assert es.connections_finding(pd.concat([by, middle])) == (
        "From 1 to 64 connections, throughput changes 1.5x (b) to 5x (a), most servers "
        "peaking at 8; at 64, a serves the most (50k requests/s).")
    c15 = pd.DataFrame({"server": ["a", "a", "a", "b", "b", "b"],
                        "read_mode": ["whole", "some", "some"] * 2,
                        "chunk": [0, 1024, 4096] * 2,
                        "read_waits_per_msg": [1.0, 16.0, 4.0, 1.0, 9.0, 2.0]})
    assert es.reads_finding(c15) == (
        "Per message, a whole read suspends a server 1 times; a read_some loop of 1 KiB "
        "suspends it 9 to 16 times (the article: 1 vs many).")


def test_the_fp_state_findings_read_the_right_kernels_and_component_sets():
    from labkit.lab.analysis import fp_state

    def rows(entry, mode, times):
        return pd.DataFrame({"entry": entry, "fp_control": mode, "ns_per_switch": times})

    runs = pd.concat([rows("asm_fpu", "same", [4.0, 4, 4.1, 3.9, 4]),
                      rows("asm_fpu", "differ", [8.0, 8, 8.2, 7.8, 8]),
                      rows("asm_fxsave", "same", [12.0, 12, 12.3, 11.7, 12])])
    said = fp_state.ladder_finding(runs)
    assert said.startswith("On this machine saving the x87/SSE registers makes a switch 3x [")
    assert "the article saw 3x" in said  # C002.3, claims.csv
    assert "make asm_fpu's switch 2x [" in said
    assert fp_state.ladder_finding(runs[runs.entry == "asm_fpu"]).startswith(
        "different MXCSR values")
    xs = pd.DataFrame({"instruction": ["xsave"] * 4 + ["xsaveopt"] * 2,
                       "step": ["x87+SSE", "x87+SSE", "all", "all", "all", "all"],
                       "state": ["dirty", "clean"] * 3,
                       "area_bytes": [576, 576, 2688, 2688, 2688, 2688],
                       "median_ns": [100.0, 99, 150, 140, 151, 90],
                       "q1_ns": [99.0, 98, 149, 139, 150, 89],
                       "q3_ns": [101.0, 100, 151, 141, 152, 91]})
    assert fp_state.xstate_finding(xs) == (
        "A dirty xsave + xrstor costs 100 ns (quartiles 99 ns to 101 ns) on x87+SSE (576 B) "
        "and 150 ns (quartiles 149 ns to 151 ns) on all (2.62 KiB); with clean registers, "
        "xsaveopt is cheapest there, 90 ns (quartiles 89 ns to 91 ns) (medians).")


def test_the_frame_findings_read_the_array_and_the_judged_block():
    from labkit.lab.analysis import frames_allocators as fa

    frame = {"suspend": 48, "array_alive": 48 + 65536, "array_dead": 48 + 65536,
             "array_callee": 48}
    sizes = pd.DataFrame({"build": "O2", "variant": list(frame), "frame_bytes": list(frame.values())})
    assert fa.sizes_finding(sizes) == (
        "At -O2 a 64 KiB array alive across the suspension adds 64 KiB to the frame (the "
        "article: 64 KiB); last used before it, in the same scope, it adds 64 KiB; in a "
        "called function, 0 B.")

    def pairs(allocator, block, times):
        return pd.DataFrame({"allocator": allocator, "block": block, "pattern": "one block",
                             "ns_shown": times})

    alloc = pd.concat([pairs("heap", 256, [20.0, 20, 21, 19, 20]),
                       pairs("pool", 256, [2.0, 2, 2.1, 1.9, 2]),
                       pairs("heap", 192, [90.0] * 5)])
    said = fa.alloc_finding(alloc)
    assert said.startswith("On 256 B blocks, one at a time, an allocate+free pair costs 20 ns "
                           "from the heap and 2 ns from the pool, heap/pool 10x [")
    assert said.endswith("the article saw ~100 against ~10 ns (10x).")  # C001.2
    assert fa.alloc_finding(alloc[alloc.allocator == "heap"]).startswith("This run did not")


def test_the_memory_findings_read_default_new_and_the_stack_ends():
    from labkit.lab.analysis import coroutine_memory as cm

    cs = pd.DataFrame({"variant": ["conn256", "conn192"], "allocator": ["heap", "pool"],
                       "bytes_per_coroutine": [300.0, 200.0],
                       "per_million_mib": [286.1, 190.7]})
    stacks = pd.DataFrame({"stack_size": [4096, 65536, 4096, 65536],
                           "touched": [False, False, True, True],
                           "bytes_per_object": [4096.0, 8192.0, 8000.0, 65536.0]})
    assert cm.memory_finding(cs, stacks) == (
        "A suspended C++20 coroutine with default new holds 300 B resident (the article: "
        "256 B); a stackful context holds 4 KiB with a 4 KiB stack and 8 KiB with a 64 KiB "
        "one, untouched, 64 KiB with the 64 KiB one touched.")
    rs = pd.DataFrame({"pool_size": [1024, 16], "per_million_mib": [60.0, 40.0],
                       "reuse / default": [0.21, 0.14], "ratio low": [0.2, 0.13],
                       "ratio high": [0.22, 0.15]})
    assert cm.reuse_finding(rs, cs) == (
        "A million connections served by a pool of 16 coroutines hold 40 MiB, 0.14x "
        "[0.13, 0.15] default new's 286 MiB; with 1,024 they hold 60 MiB. The article's "
        "pooled reuse held 0.156x default new's.")


def test_the_gain_finding_reads_the_authors_second_setup_at_the_claims_w():
    from labkit.experiments import frequency
    from labkit.lab.analysis import switch_frequency as sf

    def rows(setup, w, speeds):
        stack, batch = setup
        return pd.DataFrame({"setup": frequency.setup_label(*setup), "work_cycles": w,
                             "stack_size": stack, "batch": batch,
                             "throughput_mtasks_s": speeds})

    runs = pd.concat([rows(sf.BEFORE, 100, [10.0, 10, 10.2, 9.8, 10]),
                      rows(sf.AFTER, 100, [12.0, 12, 12.2, 11.8, 12]),
                      rows(sf.BEFORE, 0, [1.0] * 5), rows(sf.AFTER, 0, [9.0] * 5)])
    said = sf.gain_finding(runs, judge_work=100)
    assert said.startswith("At W = 100 ticks, 64 KiB, 32 tasks/switch runs 1.2x (quartiles ")
    assert said.endswith("the throughput of 1 MiB, 1 task/switch; the author gained 1.4x.")
    assert sf.gain_finding(runs, judge_work=5).startswith("No run of 64 KiB")


def test_the_copy_stack_finding_reads_both_ends_and_the_switch_without_a_copy():
    from labkit.lab.analysis import latency_ladder

    copy = pd.DataFrame({"copied_bytes_per_switch": [8192, 64], "median": [400.0, 10.0],
                         "q1": [390.0, 9.0], "q3": [410.0, 11.0], "GB/s": [20.5, 6.4]})
    ns = pd.DataFrame({"entry": ["asm_fpu"], "median": [4.0]})
    assert latency_ladder.copy_finding(copy, ns) == (
        "Copying the stack, a switch costs 10 ns (quartiles 9 ns to 11 ns) at 64 B copied and "
        "400 ns (quartiles 390 ns to 410 ns) at 8 KiB (20.5 GB/s); asm_fpu switches in 4 ns "
        "without a copy. "
        "libaco reported 33 ns at 8 B and 1 us at 8 KiB.")
    assert latency_ladder.copy_finding(copy.iloc[:0], ns) == "No copy-stack switch ran here."


def test_the_workload_findings_read_the_grid_and_the_curves():
    from labkit.lab.analysis import your_workload as yw

    g = pd.DataFrame({"advice_error": [0.05, -0.2, 0.01, None],
                      "advice_memory_error": [0.01, 0.5, None, None]})
    assert yw.error_finding(g, {"time_error": 0.1, "memory_error": 0.05}) == (
        "The advice's time was within ±10% of the measurement at 2 of 3 points (median "
        "error 5%); its memory within ±5% at 1 of 2 (median 26%).")

    def share(design, x, v):
        return {"kind": "share", "design": design, "x": x, "value": v, "low": v * 0.9,
                "high": v * 1.1, "chosen": False, "past_limit": False}

    def mem(design, n, v, chosen, past=False):
        return {"kind": "memory", "design": design, "x": n, "value": v, "low": None,
                "high": None, "chosen": chosen, "past_limit": past}

    c = pd.DataFrame([share("asm_fpu", 1.0, 0.8), share("thread_futex", 1.0, 0.9),
                      share("asm_fpu", 1e5, 0.0), share("thread_futex", 1e5, 0.02),
                      mem("asm_fpu", 100, 8192.0, True), mem("thread_futex", 100, 1 << 20, True),
                      mem("ucontext", 100, 1 << 30, True, past=True),
                      mem("asm_fpu", 10, 1.0, False)]).assign(alive=100)
    assert yw.share_finding(c) == (
        "For N = 100, at 1 ns of work between switches, switching takes 80% [72, 88] "
        "(asm_fpu) to 90% [81, 99] (thread_futex) of the time; at 100 us of work between "
        "switches, switching takes 0% [0, 0] (asm_fpu) to 2% [1.8, 2.2] (thread_futex) of "
        "the time.")
    assert yw.memory_finding(c) == ("For N = 100 coroutines, asm_fpu needs the least memory, "
                                    "8 KiB, and thread_futex the most, 1 MiB.")
