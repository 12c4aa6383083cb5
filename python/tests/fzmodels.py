"""Four training workloads built in code (nothing downloaded), for
test_models.py (small sizes, correctness against eager) and
bench/models.py (realistic sizes, step time):

  gpt2     a GPT-2 decoder block: LayerNorm, causal self-attention
           (F.scaled_dot_product_attention), GELU(tanh) MLP, residuals,
           dropout on both residual branches;
  llama    a Llama decoder block: RMSNorm, rotary embeddings (rotate-half:
           slices and cat), causal attention through
           F.scaled_dot_product_attention, SwiGLU MLP, residuals;
  resnet   a ResNet basic block in channels-last: Conv2d, BatchNorm2d
           (training mode: batch statistics, running stats updated), ReLU,
           residual;
  ce       a language-model head: LayerNorm, Linear to a 32,000-token
           vocabulary, cross-entropy.

The blocks are trained against a fixed random target with an MSE loss;
the head's loss is its cross-entropy. Importing this module needs torch.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

NAMES = ["gpt2", "llama", "resnet", "ce"]

# Presets: small runs in seconds (tests); large is the benchmark's.
SIZES = {
    "small": dict(batch=2, seq=64, hidden=128, heads=4,
                  resnet=(4, 32, 16, 16), tokens=256, ce_hidden=64,
                  vocab=32000),
    "medium": dict(batch=4, seq=256, hidden=512, heads=8,
                   resnet=(8, 64, 28, 28), tokens=2048, ce_hidden=256,
                   vocab=32000),
    "large": dict(batch=8, seq=2048, hidden=4096, heads=32,
                  resnet=(32, 256, 56, 56), tokens=8 * 2048, ce_hidden=4096,
                  vocab=32000),
}


class GPT2Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.c_proj(a))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.drop(self.mlp_proj(h))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, max_seq):
        super().__init__()
        self.heads = heads
        hd = d // heads
        ffn = 256 * math.ceil(int(8 * d / 3) / 256)   # Llama's multiple_of
        self.attention_norm = RMSNorm(d)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.ffn_norm = RMSNorm(d)
        self.w1 = nn.Linear(d, ffn, bias=False)
        self.w3 = nn.Linear(d, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(max_seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def rope(self, z, t):
        cos = self.cos[:t].to(z.dtype)
        sin = self.sin[:t].to(z.dtype)
        return z * cos + rotate_half(z) * sin

    def forward(self, x):
        b, t, d = x.shape
        h = self.attention_norm(x)
        q, k, v = (w(h).view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        q, k = self.rope(q, t), self.rope(k, t)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, t, d))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class BasicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + x)


class LMHeadCE(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, x, targets):
        return F.cross_entropy(self.head(self.norm(x)), targets)


class Workload:
    """A model, one batch (inputs, and the MSE target or None where the
    model returns its loss), and `reduce_len`, the longest reduction behind
    its outputs and gradients (for tolerances)."""

    def __init__(self, name, model, inputs, target, reduce_len, note):
        self.name = name
        self.model = model
        self.inputs = inputs
        self.target = target
        self.reduce_len = reduce_len
        self.note = note

    def loss(self, fn, inputs):
        out = fn(*inputs)
        if self.target is None:
            return out, out
        return out, F.mse_loss(out.float(), self.target)


def build(name, size, device, dropout=0.0):
    """The workload `name` at the sizes of `size` (a SIZES entry), its
    parameters in f32 on `device`, from torch's current RNG state."""
    s = size
    if name in ("gpt2", "llama"):
        b, t, d = s["batch"], s["seq"], s["hidden"]
        if name == "gpt2":
            model = GPT2Block(d, s["heads"], dropout)
            widest = 4 * d
        else:
            model = LlamaBlock(d, s["heads"], t)
            widest = model.w1.out_features
        model = model.to(device)
        x = torch.randn(b, t, d, device=device)
        target = torch.randn(b, t, d, device=device)
        return Workload(name, model, (x,), target, max(widest, b * t),
                        "batch %d, seq %d, hidden %d, %d heads"
                        % (b, t, d, s["heads"]))
    if name == "resnet":
        n, c, h, w = s["resnet"]
        cl = torch.channels_last
        model = BasicBlock(c).to(device).to(memory_format=cl)
        x = torch.randn(n, c, h, w, device=device).to(memory_format=cl)
        target = torch.randn(n, c, h, w, device=device).to(memory_format=cl)
        return Workload(name, model, (x,), target, max(n * h * w, 9 * c),
                        "%dx%dx%dx%d channels-last" % (n, c, h, w))
    if name == "ce":
        t, d, v = s["tokens"], s["ce_hidden"], s["vocab"]
        model = LMHeadCE(d, v).to(device)
        x = torch.randn(t, d, device=device)
        targets = torch.randint(0, v, (t,), device=device)
        return Workload(name, model, (x, targets), None, max(v, t, d),
                        "%d tokens, hidden %d, vocab %d" % (t, d, v))
    raise ValueError("unknown model %r (one of %s)" % (name, ", ".join(NAMES)))
