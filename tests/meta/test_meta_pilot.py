"""A new family's pilot fit and the information-gain design, against slow references."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit
from scipy.stats import betabinom, norm

from jaxcap.meta.model import P_EDGE
from jaxcap.meta.pilot import fit as pilot_fit
from jaxcap.meta.pilot import information
from jaxcap.meta.posterior import Posterior
from studies.pilot import world


def fake_posterior(n: int = 500, seed: int = 0, rho: bool = True) -> Posterior:
    """An assumed family population (studies.pilot.world's), optionally saved before ρ existed."""
    post = world.synthetic_posterior(n, seed)
    if not rho:
        del post.draws["rho"]
    return post


def test_outcome_probabilities_match_numerical_integration_over_the_level_effect():
    parts = pilot_fit.prior_particles(fake_posterior(20), arch=0, seed=1, repeat=1)
    got = pilot_fit.outcome_probabilities(parts, np.log([500.0, 3000.0]), trials=4)
    assert got.shape == (20, 2, 5)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-9)
    for s in (0, 7, 13):
        for i, b in enumerate((500.0, 3000.0)):
            gap = parts.log_c[s] - parts.log_theta[s] - np.log(b)
            phi = 1 / parts.rho[s] - 1
            for y in range(5):

                def f(d, y=y, gap=gap, phi=phi, s=s):
                    p = np.clip(expit(parts.kappa[s] * (gap - d)), 1e-6, 1 - 1e-6)
                    return betabinom.pmf(y, 4, p * phi, (1 - p) * phi) * norm.pdf(d, 0, parts.sigma[s])

                ref = integrate.quad(f, -8 * parts.sigma[s], 8 * parts.sigma[s], limit=400, points=[gap])[0]
                assert got[s, i, y] == pytest.approx(ref, abs=1e-4)


def test_binomial_when_the_posterior_has_no_rho():
    parts = pilot_fit.prior_particles(fake_posterior(10, rho=False), arch=0, seed=0, repeat=1)
    got = pilot_fit.outcome_probabilities(parts, np.log([2000.0]), trials=3)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-9)


def test_no_pilot_is_the_prior_and_pilots_move_the_boundary_toward_the_truth():
    parts = pilot_fit.prior_particles(fake_posterior(), arch=0, seed=0)
    prior = pilot_fit.fit_family(parts)
    assert prior.ess == pytest.approx(len(parts.log_c))
    assert prior.pilots == 0 and prior.runs == 0
    # a family whose boundary is ~300 bits: learned at 100, failed at 1,000, by every seed
    fit = pilot_fit.fit_family(parts, np.log([100.0, 1000.0]), [4, 4], [4, 0])
    lo, med, hi = fit.boundary_interval()
    assert lo < 1000 and hi > 100 and 100 < med < 1000
    assert fit.boundary_factor() < prior.boundary_factor() / 10
    assert fit.pilots == 2 and fit.runs == 8
    p = fit.predict(np.log([30.0, 3000.0]))
    assert p[0] > 0.8 and p[1] < 0.2


def test_weighted_quantile_equal_weights_is_numpys_hazen():
    x = np.random.default_rng(0).normal(size=101)
    q = [0.05, 0.5, 0.95]
    np.testing.assert_allclose(
        pilot_fit.weighted_quantile(x, np.ones(101), q), np.quantile(x, q, method="hazen")
    )


def _entropy(p):
    p = p[p > 0]
    return -np.sum(p * np.log(p))


def test_information_gain_equals_brute_force_enumeration_of_outcomes():
    """I(b*; y) = H(b*) − Σ_y p(y) H(b* | y), each posterior an explicit reweighting."""
    parts = pilot_fit.prior_particles(fake_posterior(300), arch=0, seed=2, repeat=2)
    fit = pilot_fit.fit_family(parts, np.log([200.0]), [2], [2])
    cands = np.log([100.0, 1000.0, 3000.0, 1e5])
    got = information.information_gain(fit, cands, trials=3, seed=5)
    assert len(fit.log_w) <= information.DESIGN_PARTICLES  # every particle, with its weight
    wts = fit.weights
    bins = information.boundary_bins(parts.log_boundary, wts)
    for i, b in enumerate(cands):
        gap = parts.log_c - parts.log_theta - b
        h_prior = _entropy(np.bincount(bins, weights=wts, minlength=information.BINS))
        expected = 0.0
        for y in range(4):
            like = np.zeros(len(wts))  # p(y | particle), by direct Gauss-Hermite sums
            x, w = np.polynomial.hermite_e.hermegauss(pilot_fit.NODES)
            for xg, wg in zip(x, w / w.sum()):
                p = np.clip(expit(parts.kappa * (gap - parts.sigma * xg)), 1e-6, 1 - 1e-6)
                phi = 1 / parts.rho - 1
                like += wg * betabinom.pmf(y, 3, p * phi, (1 - p) * phi)
            p_y = wts @ like
            post = np.bincount(bins, weights=wts * like, minlength=information.BINS) / p_y
            expected += p_y * _entropy(post)
        assert got[i] == pytest.approx(h_prior - expected, abs=1e-9)


def test_a_sharp_threshold_gains_the_entropy_of_which_side_it_is_on():
    """κ huge, no level spread, no seed correlation: y says whether b* exceeds the level, so the
    gain of one seed is the binary entropy of P(b* > level)."""
    n = 4000
    log_b = np.random.default_rng(0).uniform(0.0, 10.0, n)
    sharp, none = np.full(n, 1e4), np.full(n, 1e-9)
    parts = pilot_fit.Particles(log_b, np.zeros(n), sharp, none, np.full(n, 1e-6), np.arange(n))
    fit = pilot_fit.fit_family(parts)
    levels = np.array([2.0, 5.0, 9.0])
    got = information.information_gain(fit, levels, trials=1, seed=0)
    q = (log_b[fit.resample(n, 0)][:, None] > levels).mean(0)
    want = -(q * np.log(q) + (1 - q) * np.log(1 - q))
    np.testing.assert_allclose(got, want, atol=0.02)
    assert np.argmax(got) == 1  # the middle halves the interval
    # a second uncorrelated seed at a deterministic level adds nothing
    two = information.information_gain(fit, levels, trials=2, seed=0)
    np.testing.assert_allclose(two, got, atol=0.02)


def test_next_pilot_picks_the_most_informative_untried_level_and_few_seeds_when_they_agree(monkeypatch):
    parts = pilot_fit.prior_particles(fake_posterior(), arch=0, seed=0)
    fit = pilot_fit.fit_family(parts)
    cands = np.log(np.geomspace(10, 1e6, 15))
    i, seeds, gains = information.next_pilot(fit, cands, list(range(15)), (1, 2, 4), seed=0)
    assert i == int(np.argmax(gains[4]))
    assert seeds in (1, 2, 4) and gains[seeds][i] >= information.SEED_SHARE * gains[4][i]
    j, _, _ = information.next_pilot(fit, cands, [k for k in range(15) if k != i], (1, 2, 4), seed=0)
    assert j != i
    with pytest.raises(ValueError, match="no untried"):
        information.next_pilot(fit, cands, [], (1,), seed=0)
    # gains that rounded below 0 (particles that agree): the most seeds, not a StopIteration
    negative = lambda fit, log_bits, trials, seed, edges=None: np.full(len(log_bits), -1e-17 / trials)
    monkeypatch.setattr(information, "information_gain", negative)
    assert information.next_pilot(fit, cands, [0, 1], (1, 2, 4), seed=0)[1] == 4


def test_bisection_pilot_halves_the_interval_in_log_bits():
    x = np.log([1, 2, 4, 8, 16, 32, 64, 128, 256])
    assert information.bisection_pilot(x, {}) == 4  # the log-middle of the whole range
    assert information.bisection_pilot(x, {4: 1.0}) == 6  # learned at 16: between 16 and 256
    assert information.bisection_pilot(x, {4: 1.0, 6: 0.0}) == 5  # between 16 and 64
    assert information.bisection_pilot(x, {4: 1.0, 6: 0.0, 5: 0.25}) is None  # nothing left inside


def test_information_gain_agrees_with_quest_plus_on_a_threshold_grid():
    """QUEST+ (Watson 2017; the `questplus` package) picks the stimulus of least expected
    posterior entropy over its parameter grid. With the threshold b* the only unknown (one
    particle per grid value, no level spread, independent seeds), its expected entropy is the
    prior entropy minus our gain, at every candidate level and after every update."""
    questplus = pytest.importorskip("questplus")
    grid = np.linspace(2.0, 9.0, 32)  # log b*
    levels = np.linspace(1.5, 9.5, 17)  # candidate log bits
    kappa = 3.0
    n = len(grid)
    none = np.full(n, 1e-12)
    # ρ small (the binomial) but not so small that the beta-binomial loses digits
    parts = pilot_fit.Particles(grid, np.zeros(n), np.full(n, kappa), none, np.full(n, 1e-5), np.arange(n))
    domain = {"mean": grid, "sd": np.ones(1), "lower_asymptote": np.zeros(1), "lapse_rate": np.zeros(1)}
    qp = questplus.QuestPlus(
        stim_domain={"intensity": levels},
        param_domain=domain,
        outcome_domain={"response": ["Yes", "No"]},
        func="norm_cdf",
        stim_scale="linear",
    )
    # [stimulus, threshold], kept off 0 and 1 as the model keeps it (P_EDGE)
    learned = np.clip(expit(kappa * (grid[None, :] - levels[:, None])), P_EDGE, 1 - P_EDGE)
    like = qp.likelihoods.copy()  # (response, intensity, mean, sd, lower, lapse): ours instead
    like.values[0, :, :, 0, 0, 0] = learned
    like.values[1, :, :, 0, 0, 0] = 1 - learned
    qp.likelihoods = like
    tried, outcomes = [], []
    for outcome in ("Yes", "No", "No", "Yes"):
        fit = pilot_fit.fit_family(parts, levels[tried], [1] * len(tried), outcomes)
        prior_h = _entropy(fit.weights)
        gain = information.information_gain(fit, levels, trials=1, seed=0)
        chosen = qp.next_stim["intensity"]
        post = qp.posterior * qp.likelihoods  # QUEST+'s own expected entropies, as next_stim has them
        p_out = post.sum(dim=list(domain))
        post = post / p_out
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -(post * np.log(post)).fillna(0.0).sum(dim=list(domain))
        expected_h = (p_out * h).sum(dim="response").values
        np.testing.assert_allclose(prior_h - gain, expected_h, atol=1e-6)
        assert levels[int(np.argmax(gain))] == pytest.approx(chosen)
        i = int(np.argmax(gain))
        qp.update(stim={"intensity": chosen}, outcome={"response": outcome})
        tried.append(i)
        outcomes.append(1 if outcome == "Yes" else 0)
