"""Layer tables of the eight models of DL2's job mix, derived from the architectures' definitions.

Each function returns ``(names, params, macs)``: per layer ℓ its parameter count (weights and
biases; batch-norm scales ignored, they are < 1% of any of these models) and its multiply-accumulates
per sample in the forward pass. Layers are listed in forward order 1..L. MODELS.md §2.1 turns
them into m_{jℓ} (bytes, 4 per float32 parameter) and φ_{jℓ}, ψ_{jℓ} (proportional to MACs,
the constant is calibrated per model, see :mod:`dlsched.perf.calibrate`).

Sources (architecture definitions, no code taken):

============================  ==========================================================  ============
model (DL2 name)              definition used                                              params / MB
============================  ==========================================================  ============
resnet-50                     He et al. 2016, ImageNet bottleneck ResNet, stages 3-4-6-3   25.5M / 102
vgg-16                        Simonyan & Zisserman 2015, configuration D                   138.4M / 553
resnext-110                   CIFAR ResNet-110 layout (He et al. 2016 §4.2, 3 x 18 basic   1.7M / 6.9
                              blocks, 16/32/64 channels); DL2 lists 6.92 MB, which is this
                              size (a grouped ResNeXt of depth 110 on CIFAR has the same
                              layer count and depth profile)
inception-bn                  Ioffe & Szegedy 2015 (BN-Inception, Fig. 5 of the Inception  ~11M / ~44
                              paper's modified table), modules 3a..5b
seq2seq                       2-layer LSTM encoder + 2-layer LSTM decoder, 256 units,      9.0M / 36
                              9,000-word vocabularies, 30 tokens (sizes chosen so the total
                              matches DL2's 36.5 MB)
cnn-text-classification       Kim 2014: 300-d embeddings, filters 3/4/5 x 100, 56 tokens;  6.0M / 24
                              vocabulary 19,900 (matches DL2's 24.0 MB)
dssm                          Huang et al. 2013 two-tower DSSM 300-300-128 with a 2,000-d  1.46M / 5.8
                              hashed input per tower (matches DL2's 6.0 MB)
wlm                           Zaremba et al. 2014 "small" PTB LM (MXNet word_language_     4.65M / 18.6
                              model example): 2 LSTM layers of 200, vocabulary 10,000,
                              35 steps
============================  ==========================================================  ============

The tests check every total against DL2's ``model_size_mb`` (shared/data/dl2/job_types.csv).
"""

from __future__ import annotations

import numpy as np

Layers = tuple[list[str], np.ndarray, np.ndarray]


class _Net:
    """Accumulates (name, params, MACs/sample) layer by layer."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.params: list[float] = []
        self.macs: list[float] = []

    def conv(self, name: str, k: int, cin: int, cout: int, hw_out: int, bias: bool = False) -> None:
        w = k * k * cin * cout
        self.names.append(name)
        self.params.append(w + (cout if bias else 0))
        self.macs.append(w * hw_out * hw_out)

    def dense(self, name: str, nin: int, nout: int, steps: int = 1) -> None:
        self.names.append(name)
        self.params.append(nin * nout + nout)
        self.macs.append(nin * nout * steps)

    def embedding(self, name: str, vocab: int, dim: int, steps: int) -> None:
        # a lookup: the parameters are large, the compute is a copy of `steps` rows
        self.names.append(name)
        self.params.append(vocab * dim)
        self.macs.append(dim * steps)

    def lstm(self, name: str, nin: int, hidden: int, steps: int) -> None:
        w = 4 * hidden * (nin + hidden)
        self.names.append(name)
        self.params.append(w + 8 * hidden)  # two bias vectors per gate (cuDNN / MXNet layout)
        self.macs.append(w * steps)

    def done(self) -> Layers:
        return list(self.names), np.array(self.params, dtype=float), np.array(self.macs, dtype=float)


def resnet50() -> Layers:
    n = _Net()
    n.conv("conv1", 7, 3, 64, 112)
    cin, hw = 64, 56
    for stage, (blocks, mid, stride) in enumerate([(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)], start=2):
        out = 4 * mid
        for b in range(blocks):
            s = stride if b == 0 else 1
            hw_out = hw // s
            n.conv(f"res{stage}{b}_a", 1, cin, mid, hw)
            n.conv(f"res{stage}{b}_b", 3, mid, mid, hw_out)
            n.conv(f"res{stage}{b}_c", 1, mid, out, hw_out)
            if b == 0:
                n.conv(f"res{stage}{b}_proj", 1, cin, out, hw_out)
            cin, hw = out, hw_out
    n.dense("fc", 2048, 1000)
    return n.done()


def vgg16() -> Layers:
    n = _Net()
    cin, hw = 3, 224
    for block, (cout, reps) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], start=1):
        for r in range(reps):
            n.conv(f"conv{block}_{r + 1}", 3, cin, cout, hw, bias=True)
            cin = cout
        hw //= 2
    n.dense("fc6", 512 * 7 * 7, 4096)
    n.dense("fc7", 4096, 4096)
    n.dense("fc8", 4096, 1000)
    return n.done()


def resnext110() -> Layers:
    n = _Net()
    n.conv("conv1", 3, 3, 16, 32)
    cin, hw = 16, 32
    for stage, cout in enumerate([16, 32, 64], start=1):
        for b in range(18):
            hw_out = hw // 2 if (b == 0 and stage > 1) else hw
            n.conv(f"s{stage}b{b}_1", 3, cin, cout, hw_out)
            n.conv(f"s{stage}b{b}_2", 3, cout, cout, hw_out)
            cin, hw = cout, hw_out
    n.dense("fc", 64, 10)
    return n.done()


#: BN-Inception modules: (name, #1x1, #3x3 reduce, #3x3, #double 3x3 reduce, #double 3x3, pool proj or 0, stride)
_INCEPTION = [
    ("3a", 64, 64, 64, 64, 96, 32, 1), ("3b", 64, 64, 96, 64, 96, 64, 1), ("3c", 0, 128, 160, 64, 96, 0, 2),
    ("4a", 224, 64, 96, 96, 128, 128, 1), ("4b", 192, 96, 128, 96, 128, 128, 1),
    ("4c", 160, 128, 160, 128, 160, 128, 1), ("4d", 96, 128, 192, 160, 192, 128, 1),
    ("4e", 0, 128, 192, 192, 256, 0, 2), ("5a", 352, 192, 320, 160, 224, 128, 1),
    ("5b", 352, 192, 320, 192, 224, 128, 1),
]


def inception_bn() -> Layers:
    n = _Net()
    n.conv("conv1", 7, 3, 64, 112)
    n.conv("conv2_red", 1, 64, 64, 56)
    n.conv("conv2", 3, 64, 192, 56)
    cin, hw = 192, 28
    for name, c1, c3r, c3, cdr, cd, cp, stride in _INCEPTION:
        hw_out = hw // stride
        if c1:
            n.conv(f"{name}_1x1", 1, cin, c1, hw)
        n.conv(f"{name}_3x3_red", 1, cin, c3r, hw)
        n.conv(f"{name}_3x3", 3, c3r, c3, hw_out)
        n.conv(f"{name}_d3x3_red", 1, cin, cdr, hw)
        n.conv(f"{name}_d3x3_a", 3, cdr, cd, hw)
        n.conv(f"{name}_d3x3_b", 3, cd, cd, hw_out)
        if cp:
            n.conv(f"{name}_pool_proj", 1, cin, cp, hw)
        cin = c1 + c3 + cd + (cp if cp else cin)  # a stride-2 module passes the pooled input through
        hw = hw_out
    n.dense("fc", 1024, 1000)
    return n.done()


def seq2seq() -> Layers:
    n = _Net()
    vocab, dim, hidden, steps = 9000, 256, 256, 30
    n.embedding("src_embed", vocab, dim, steps)
    n.lstm("enc_lstm1", dim, hidden, steps)
    n.lstm("enc_lstm2", hidden, hidden, steps)
    n.embedding("tgt_embed", vocab, dim, steps)
    n.lstm("dec_lstm1", dim, hidden, steps)
    n.lstm("dec_lstm2", hidden, hidden, steps)
    n.dense("proj", hidden, vocab, steps)
    return n.done()


def cnn_text() -> Layers:
    n = _Net()
    vocab, dim, steps, maps = 19_900, 300, 56, 100
    n.embedding("embed", vocab, dim, steps)
    for k in (3, 4, 5):
        n.names.append(f"conv{k}")
        n.params.append(k * dim * maps + maps)
        n.macs.append(k * dim * maps * (steps - k + 1))
    n.dense("fc", 3 * maps, 2)
    return n.done()


def dssm() -> Layers:
    n = _Net()
    for tower in ("query", "doc"):
        n.dense(f"{tower}_l1", 2000, 300)
        n.dense(f"{tower}_l2", 300, 300)
        n.dense(f"{tower}_l3", 300, 128)
    return n.done()


def wlm() -> Layers:
    n = _Net()
    vocab, hidden, steps = 10_000, 200, 35
    n.embedding("embed", vocab, hidden, steps)
    n.lstm("lstm1", hidden, hidden, steps)
    n.lstm("lstm2", hidden, hidden, steps)
    n.dense("decoder", hidden, vocab, steps)
    return n.done()


#: DL2 model name -> layer table builder
ARCHITECTURES = {
    "resnet-50": resnet50,
    "vgg-16": vgg16,
    "resnext-110": resnext110,
    "inception-bn": inception_bn,
    "seq2seq": seq2seq,
    "cnn-text-classification": cnn_text,
    "dssm": dssm,
    "wlm": wlm,
}

BYTES_PER_PARAM = 4
