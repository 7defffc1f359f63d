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
