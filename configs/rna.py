"""RNA secondary structure (ViennaRNA MFE dot-brackets): which lengths and GC contents does a small
model fold?

    python -m jaxcap.launch --config configs/rna.py          # 2-core CPU: ~6 min
    python -m jaxcap.launch --config configs/rna.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/rna.py:full     # seed baseline, accelerator
    python -m jaxcap.main.rna_structure --workdir W              # then: base-pair F1, calibration

Random RNA (i.i.d. bases, GC content `gc`) labelled once on the host by ViennaRNA's MFE fold and
cached under ~/.cache/jaxcap/rna ($JAXCAP_RNA_CACHE); see jaxcap/tasks/rna/structure.py. One bucket per
maximum length L (12 and 20: shapes change); inside a bucket the members differ in GC content
(0.5, 0.7, 0.9: a knob; GC-rich sequences fold more). Members train on lengths in [L/2, L] and
are also scored on 8 longer lengths never seen in training (`val_long_*`). The model reads all
positions with bidirectional attention and predicts '.', '(' or ')' at each. Complexity: the
per-position label entropy summed over positions (rna.py); success: val exact match >= 0.9.

Default: 2 layers, d_model 64, 4 heads x 16, d_ff 128; 4,096 training sequences per level,
batch 32, 1,500 steps.
Without viennarna, add --config.task.folding=nussinov (base-pair maximization: another target).

Measured times and results: docs/configs.md#configsrnapy.
"""

from jaxcap.config.base import base_config, parse_arg


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("rna")
    c.task.update(length=12, min_length=6, gc=0.5, longer_by=8, train_size=4096, n_eval=512)
    c.sweep.task.gc = (0.5, 0.7, 0.9)
    c.sweep.seeds = 1
    c.sweep.buckets = ("task.length=12,task.min_length=6", "task.length=20,task.min_length=10")
    c.model.update(n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=128)
    c.hparams.update(learning_rate=2e-3, warmup_steps=100.0, weight_decay=0.01)
    c.train.update(steps=1500, chunk_steps=250, batch_size=32, clip_norm=1.0, schedule="cosine")
    c.eval.batch_size = 512
    c.note = (
        "a small model (d_model 64) so the default finishes in minutes on a CPU; :full is the seed baseline"
    )
    if variant == "smoke":
        # doubles as the learning test: at GC 0.9 a third of 10-nt sequences fold (G-C stems);
        # the model beats the input-blind per-position guess (~0.82) within a few hundred steps
        c.task.update(length=10, min_length=0, gc=0.9, longer_by=4, train_size=1024, n_eval=256)
        c.sweep.task.gc = (0.9,)
        c.sweep.seeds = 1
        c.sweep.buckets = ()
        c.model.update(n_layers=2, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0, weight_decay=0.0)
        c.train.update(steps=300, chunk_steps=100, batch_size=64, schedule="constant")
        c.eval.batch_size = 256
        c.note = "smoke test: 10-nt GC-rich sequences, a tiny model for a few hundred steps"
    elif variant == "full":
        c.task.update(length=24, min_length=12, longer_by=16, train_size=20_000, n_eval=2048)
        c.sweep.task.gc = (0.5, 0.7, 0.9)
        c.sweep.seeds = 3
        c.sweep.buckets = tuple(f"task.length={n},task.min_length={n // 2}" for n in (24, 32, 48, 64))
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=128)
        c.note = "the seed baseline model, lengths up to 64 (labelling ~10-15 min of CPU once, then cached)"
    return c
