"""Sentiment from the VADER lexicon: which level of the rule is learned, and does it transfer?

    python -m jaxcap.launch --config configs/sentiment.py              # 2-core CPU: ~5 min of CPU
    python -m jaxcap.launch --config configs/sentiment.py:smoke        # seconds; used by the tests
    python -m jaxcap.launch --config configs/sentiment.py:full         # seed baseline, accelerator
    python -m jaxcap.main.fetch_vader fetch                            # once, before :vader
    python -m jaxcap.launch --config configs/sentiment.py:vader        # real sentences, cross-domain

Controlled (`sentiment`, jaxcap/tasks/sentiment.py): template sentences over 256 frequent VADER
lexicon words with VADER's negators (in 1/4 of the phrases) and boosters; labels ~
Bernoulli(sigmoid(2 score)) of VADER's rule, so the Bayes-optimal accuracy is known. Levels 0 … 6
add negation, negation scope, stacked modifiers, 'but' contrast and length (1 … 6 phrases);
2 seeds each, one program. Success: the model's expected accuracy is >= 0.97 of the Bayes
accuracy on the val set (`val_bayes_fraction`).

Real (`:vader`, jaxcap/tasks/vader/real_sentiment.py): VADER's human-rated sentences, trained on the movie and
Amazon review snippets and scored in domain (`val_*`) and on tweets and NYT editorials
(`cross_*`, per domain `tweets_*`, `nyt_*`), accuracy and macro F1.

Default: a small model (2 layers, d_model 32, 4 heads x 8, d_ff 64), fresh sentences every step
(a stream), 2,000 steps of batch 32; `:vader` uses d_model 64 (4 heads x 16, d_ff 128), dropout
0.1, weight decay 0.01, 1,500 steps of batch 64.

Measured times and results: docs/configs.md#configssentimentpy.
"""

from jaxcap.config.base import base_config, parse_arg

VARIANTS = ("smoke", "full", "vader", "vader_smoke")


def get_config(arg=None):
    variant = parse_arg(arg, VARIANTS)
    if variant.startswith("vader"):
        return _vader(variant)
    c = base_config("sentiment")
    # negators in 1/4 of phrases: at 1/2, level 1 is an XOR of polarity and negation (see below)
    c.task.update(level=0, n_words=256, beta=2.0, negation_rate=0.25, n_eval=1024)
    c.sweep.task.level = (0, 1, 2, 3, 4, 5, 6)
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=64)
    c.hparams.update(learning_rate=2e-3, warmup_steps=100.0)
    c.train.update(steps=2000, chunk_steps=250, batch_size=32, clip_norm=1.0)
    c.eval.batch_size = 1024
    c.note = (
        "a small model (d_model 32) so the default finishes in minutes on a CPU; :full is the seed baseline"
    )
    if variant == "smoke":
        # doubles as the learning test: the lexicon lookup (level 0) over 32 words is learned
        c.task.update(n_words=32, n_eval=256)
        c.sweep.task.level = (0, 1)
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0)
        c.train.update(steps=200, chunk_steps=100, batch_size=64)
        c.eval.batch_size = 256
        c.note = "smoke test: levels 0 and 1 over 32 words, a tiny model for a few hundred steps"
    elif variant == "full":
        c.task.update(n_words=1000, min_count=3, n_eval=4096)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.note = "the seed baseline model, 1,000 lexicon words"
    return c


def _vader(variant):
    c = base_config("vader")
    c.task.update(train_domains="movies,amazon", vocab_size=8192, seq_len=48, n_eval=4096)
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=128)
    c.hparams.update(learning_rate=1e-3, warmup_steps=100.0, dropout=0.1, weight_decay=0.01)
    c.train.update(steps=1500, chunk_steps=250, batch_size=64, clip_norm=1.0)
    c.eval.batch_size = 1024
    c.note = "real sentences: train on movie + Amazon reviews, score on tweets and NYT editorials"
    if variant == "vader_smoke":
        c.task.update(vocab_size=64, seq_len=12, val_fraction=0.25, n_eval=64)
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0, dropout=0.0, weight_decay=0.0)
        c.train.update(steps=200, chunk_steps=100, batch_size=32)
        c.eval.batch_size = 64
        c.note = "smoke test: set config.task.data_dir to a fixture (vader_data.write_fixture)"
    return c
