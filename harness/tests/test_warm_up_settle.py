"""When warm-ups stop (runner.settled): the engine's step time, not its total, and a trusted
engine's first warm-up may settle on its own (issue 29, item 5: spend the GPU on what is measured)."""
from harness.decode.engineproc import Sample
from harness.decode.runner import SETTLE_MIN_STEPS, settled, steady_within

MS = 1_000_000


def sample(ttft_ms: float, steps_ms: list) -> Sample:
    """A sample whose first token came ttft_ms after the start and each next one steps_ms[i] later."""
    stamps = [int(ttft_ms * MS)]
    for s in steps_ms:
        stamps.append(stamps[-1] + int(s * MS))
    return Sample(steps=[[1]] * len(stamps), start_ns=0, stamps=stamps)


# The reference's first sample of a shape: the prefill graph captured (slow TTFT), the decode graph
# captured at the first step, then steady steps.
CAPTURING = sample(400.0, [250.0] + [5.75] * 127)
STEADY = sample(9.4, [5.75] * 128)


def test_a_trusted_engine_settles_after_one_warm_up_whose_steps_settled_inside_it():
    assert steady_within(CAPTURING)
    assert settled("reference", [CAPTURING]) and settled("baseline", [CAPTURING])


def test_the_candidate_never_settles_after_one_warm_up():
    assert not settled("candidate", [CAPTURING])
    assert not settled("candidate", [])


def test_the_candidate_settles_on_its_step_time_when_the_first_total_still_holds_the_capture():
    # totals 1.38 s against 0.75 s: far apart, but the step time is the same
    assert settled("candidate", [CAPTURING, STEADY])


def test_the_candidate_settles_after_a_second_warm_up_whose_steps_settled_inside_it():
    # measured on the H200: the first sample of a shape runs every step ~13 % slower; the second is the steady one
    slow_first = sample(457.0, [6.5] * 255)
    assert settled("candidate", [slow_first, STEADY])
    assert settled("reference", [slow_first])  # a trusted engine's steady first warm-up: its timed samples are faster still


def test_a_step_time_still_falling_does_not_settle():
    falling = sample(20.0, [10.0 - 4.0 * i / 128 for i in range(128)])
    assert not steady_within(falling)
    assert not settled("reference", [falling])
    assert not settled("candidate", [STEADY, falling])  # its last one still falling, and 13 % slower than the one before


def test_samples_too_short_for_a_step_time_fall_back_to_their_totals():
    short = [sample(100.0, [5.0] * (SETTLE_MIN_STEPS - 2)), sample(102.0, [5.0] * (SETTLE_MIN_STEPS - 2))]
    assert not steady_within(short[0])
    assert not settled("reference", short[:1])
    assert settled("candidate", short)
    assert not settled("candidate", [short[0], sample(150.0, [5.0] * (SETTLE_MIN_STEPS - 2))])
