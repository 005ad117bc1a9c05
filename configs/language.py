"""Language modelling with a known optimum (Markov chains, LL(1) PCFGs, HMMs) and on Shakespeare.

    python -m jaxcap.launch --config configs/language.py                      # Markov; CPU minutes
    python -m jaxcap.launch --config configs/language.py:smoke                # seconds; tests
    python -m jaxcap.launch --config configs/language.py:pcfg                 # CPU minutes
    python -m jaxcap.launch --config configs/language.py:shakespeare          # CPU minutes
    python -m jaxcap.launch --config configs/language.py:full                 # Markov, accelerator
    python -m jaxcap.launch --config configs/language.py:pcfg_full            # accelerator
    python -m jaxcap.launch --config configs/language.py:shakespeare_full     # accelerator
    python -m jaxcap.launch --config configs/language.py:hmm                  # CPU minutes
    python -m jaxcap.launch --config configs/language.py:hmm_smoke            # seconds; tests
    python -m jaxcap.launch --config configs/language.py:hmm_full             # accelerator

Causal LM, one prediction per position, scored by `val_excess_bits`: the model's cross-entropy
minus the true process's, in bits per token (jaxcap/tasks/language.py); "learned" is an
excess <= 0.05 bits per token.

Default (Markov): order-k chains over V = 8 symbols (Dirichlet(0.5) rows), k = 1 … 4 the
levels, 2 seeds each, one program; complexity V^k (V - 1) free probabilities at the precision
the threshold asks for. `:pcfg`: a random LL(1) grammar over 16 terminals (4 rules per
nonterminal, 2 nonterminals per level, bodies of up to 2), depth 1 … 8 the levels.
`:hmm`: a sticky hidden Markov model (jaxcap/tasks/hmm.py) with K = 2, 4, 8, 16 hidden states
emitting V = 8 symbols (self-transition 0.8 + 0.2 Dirichlet(1) rows, Dirichlet(0.2) emission
rows), optimum by the forward algorithm; complexity K (K - 1) + K (V - 1) free probabilities at
the threshold's precision.
`:shakespeare`: characters of the comedies, histories, problem plays and tragedies; val is the
last 10% of each of those plays, val_ood the Roman plays and romances (another domain);
the headline number is val bits per character.

Small models (d_model 32, or 64 for Shakespeare) so the defaults finish in minutes on a CPU.

Measured times and results: docs/configs.md#configslanguagepy.
"""

from jaxcap.config.base import base_config, parse_arg

VARIANTS = ("smoke", "full", "pcfg", "pcfg_smoke", "pcfg_full", "shakespeare", "shakespeare_smoke")
VARIANTS += ("shakespeare_full", "hmm", "hmm_smoke", "hmm_full")


def _common(c, steps, batch_size):
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=128, attention="causal")
    c.hparams.update(learning_rate=2e-3, warmup_steps=100.0)
    c.train.update(steps=steps, chunk_steps=250, batch_size=batch_size, clip_norm=1.0)
    c.eval.batch_size = 256
    c.note = (
        "a small model (d_model 32) so the default finishes in minutes on a CPU; :*full is the seed baseline"
    )


def _full(c):
    c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
    c.train.update(steps=20_000, chunk_steps=1000, batch_size=128)
    c.sweep.seeds = 3
    c.note = "the seed baseline model"


def get_config(arg=None):
    variant = parse_arg(arg, VARIANTS)
    if variant.startswith("pcfg"):
        return _pcfg(variant)
    if variant.startswith("shakespeare"):
        return _shakespeare(variant)
    if variant.startswith("hmm"):
        return _hmm(variant)
    c = base_config("markov")
    c.task.update(vocab=8, order=1, length=64, concentration=0.5, n_eval=256)
    c.sweep.task.order = (1, 2, 3, 4)
    c.sweep.seeds = 2
    _common(c, steps=2000, batch_size=32)
    if variant == "smoke":
        # doubles as the learning test: a first-order chain over 4 symbols to within 0.05 bits
        c.task.update(vocab=4, order=1, length=32, n_eval=128)
        c.sweep.task.order = ()
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0)
        c.train.update(steps=200, chunk_steps=100, batch_size=32)
        c.eval.batch_size = 128
        c.note = "smoke test: an order-1 chain over 4 symbols, a tiny model for a few hundred steps"
    elif variant == "full":
        c.sweep.task.order = (1, 2, 3, 4, 5, 6)
        _full(c)
    return c


def _pcfg(variant):
    c = base_config("pcfg")
    c.task.update(vocab=16, n_rules=4, width=2, branching=2, depth=1, length=64, n_eval=256)
    c.sweep.task.depth = (1, 2, 3, 4, 6, 8)
    c.sweep.seeds = 2
    _common(c, steps=2000, batch_size=32)
    if variant == "pcfg_smoke":
        c.task.update(vocab=8, n_rules=3, length=32, n_eval=128)
        c.sweep.task.depth = (1, 3)
        c.sweep.seeds = 1
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.train.update(steps=100, chunk_steps=50)
        c.eval.batch_size = 128
        c.note = "smoke test: depths 1 and 3, a tiny model for a few steps"
    elif variant == "pcfg_full":
        c.task.update(length=256, n_eval=1024)
        c.sweep.task.depth = (1, 2, 3, 4, 6, 8, 12, 16)
        _full(c)
    return c


def _hmm(variant):
    c = base_config("hmm")
    c.task.update(vocab=8, states=2, length=64, n_eval=256)
    c.task.update(concentration=1.0, emission_concentration=0.2, stickiness=0.8)
    c.sweep.task.states = (2, 4, 8, 16)
    c.sweep.seeds = 2
    _common(c, steps=2000, batch_size=32)
    if variant == "hmm_smoke":
        # doubles as the learning test: a 2-state HMM over 4 symbols to within 0.1 bits
        c.task.update(vocab=4, states=2, length=32, n_eval=128)
        c.sweep.task.states = ()
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0)
        c.train.update(steps=200, chunk_steps=100, batch_size=32)
        c.eval.batch_size = 128
        c.note = "smoke test: a 2-state HMM over 4 symbols, a tiny model for a few hundred steps"
    elif variant == "hmm_full":
        c.task.update(length=256, n_eval=1024)
        c.sweep.task.states = (2, 4, 8, 16, 32, 64)
        _full(c)
    return c


def _shakespeare(variant):
    c = base_config("shakespeare")
    c.task.update(length=128, n_eval=256)
    c.sweep.seeds = 2
    _common(c, steps=2000, batch_size=32)
    c.model.update(d_model=64, n_heads=4, d_head=16, d_ff=256)
    c.eval.batch_size = 128
    c.note = "a small model (d_model 64) so the default finishes in minutes on a CPU"
    if variant == "shakespeare_smoke":
        c.task.update(length=32, n_eval=64, train_genres="romances", eval_genres="roman")
        c.sweep.seeds = 1
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.train.update(steps=100, chunk_steps=50)
        c.eval.batch_size = 64
        c.note = "smoke test: a tiny model for a few steps"
    elif variant == "shakespeare_full":
        c.task.update(length=256, n_eval=1024)
        _full(c)
    return c
