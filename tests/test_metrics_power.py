import numpy as np
import pytest

from verirag.metrics.power import noninferiority_n, noninferiority_power
from verirag.metrics.stats import bootstrap_ci


def simulated_pairs(rng, n: int, discordant: float, difference: float):
    """n questions: right in exactly one arm with probability `discordant`, the new arm's share of
    those set so that its accuracy minus the old one's is `difference`; both right otherwise half the time."""
    u = rng.random(n)
    gained = discordant / 2 + difference / 2
    new = np.where(u < gained, 1, np.where(u < discordant, 0, rng.random(n) < 0.5)).astype(float)
    old = np.where(u < gained, 0, np.where(u < discordant, 1, new)).astype(float)
    return new, old


def test_the_closed_form_matches_the_textbook_value():
    # (z_0.975 + z_0.8)^2 * 0.1 / 0.02^2 = 7.849 * 250 = 1962.2
    assert noninferiority_n(0.10, 0.02) == 1963
    assert noninferiority_power(0.10, 0.02, 1963) == pytest.approx(0.8, abs=0.001)
    # a lossless arm at exactly the n of equal tails passes half the time
    assert noninferiority_power(0.10, 0.02, round(1.959964**2 * 0.1 / 0.02**2)) == pytest.approx(0.5, abs=0.01)
    assert noninferiority_n(0.05, 0.02) < noninferiority_n(0.10, 0.02) < noninferiority_n(0.10, 0.02, difference=-0.005)


@pytest.mark.parametrize("discordant,difference,n", [(0.10, 0.0, 800), (0.10, 0.0, 1963), (0.06, 0.005, 600)])
def test_power_agrees_with_simulation_of_the_normal_interval(discordant, difference, n):
    rng = np.random.default_rng(0)
    sims, margin, met = 4000, 0.02, 0
    for _ in range(sims):
        new, old = simulated_pairs(rng, n, discordant, difference)
        d = new - old
        low = d.mean() - 1.959964 * d.std(ddof=1) / np.sqrt(n)
        met += low > -margin
    assert met / sims == pytest.approx(noninferiority_power(discordant, margin, n, difference=difference), abs=0.03)


def test_power_agrees_with_the_bootstrap_interval_the_benchmarks_print():
    rng = np.random.default_rng(1)
    n, sims, met = 800, 150, 0
    for _ in range(sims):
        new, old = simulated_pairs(rng, n, 0.10, 0.0)
        ci = bootstrap_ci(lambda a, b: a.mean() - b.mean(), new, old, n_resamples=400, seed=int(rng.integers(1 << 30)))
        met += ci.low > -0.02
    # 0.44 predicted; 150 runs give a standard error of about 0.04
    assert abs(met / sims - noninferiority_power(0.10, 0.02, n)) < 0.12


@pytest.mark.parametrize(
    "kwargs",
    [
        {"discordant": 0.0, "margin": 0.02},
        {"discordant": 0.1, "margin": 0.0},
        {"discordant": 0.1, "margin": 0.02, "difference": -0.03},
        {"discordant": 0.01, "margin": 0.02, "difference": 0.2},
        {"discordant": 0.1, "margin": 0.02, "confidence": 1.0},
    ],
)
def test_impossible_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        noninferiority_n(**kwargs)
    with pytest.raises(ValueError):
        noninferiority_power(n=100, **kwargs)
