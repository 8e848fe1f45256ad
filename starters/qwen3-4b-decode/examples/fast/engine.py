"""A faster exact engine for qwen3-4b-decode: its own Qwen3 forward in plain PyTorch, a static KV
cache it owns, fused projections, and the whole decode step captured in one CUDA graph.

Why each piece:
- The baseline (Transformers, eager, DynamicCache) spends most of its ~40 ms per token launching
  hundreds of small kernels from Python; one decode step of a 4B BF16 model needs only ~8 GB of
  weight reads (~2 ms on an H100/H200). A CUDA graph replays the step's kernels without Python.
- Graphs need fixed addresses and shapes, so the KV cache is preallocated per (batch, length) and
  written in place at a position held in a device tensor; attention runs over the whole cache
  with a mask (slots after the current position are masked out), so every step has one shape.
  (transformers' own static cache + torch.compile fails under CUDA graphs: own the cache.)
- q/k/v and gate/up are each one matmul (fused weights): fewer, larger kernels.
- The next step's graph is launched before the previous step's ids are copied to the host and
  yielded, so the GPU is never idle waiting on Python.
- The prefill is a graph too (one per batch and prompt length, captured on first use): run eagerly
  it is ~600 launches from Python (35-49 ms at batch 1 on the H200 VM), which follow the machine's
  CPU from one sample to the next; a reference that official runs pair every candidate with must
  not carry that noise (harness/GPU_RESULTS.md).
Exactness: same arithmetic as the reference (BF16 weights, float32 RMSNorm and softmax, greedy
argmax); results differ from the baseline only by BF16 rounding order, which the harness's
teacher-forced check accepts within its logit tolerance.
On a machine without CUDA it runs the same code eagerly in float32 (the CPU tests use that).
"""
import json
import os

import torch
import torch.nn.functional as F

try:
    from safetensors.torch import load_file as _st_load
except Exception:  # the CPU test machine has no safetensors package
    _st_load = None
from st_io import load_file as _own_load


def _load_dir(path):
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as fh:
            files = sorted(set(json.load(fh)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for f in files:
        full = os.path.join(path, f)
        out.update(_st_load(full) if _st_load else _own_load(full, use_package=False))
    return out


def _rms(x, w, eps):
    dtype = x.dtype
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(dtype)


def _rot(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class _State:
    """Everything one (batch, length) shape needs; graph-captured on first use."""

    def __init__(self, eng, B, S):
        c, dev, dt = eng.c, eng.device, eng.dtype
        shape = (B, c["kv"], S, c["d"])
        self.k = [torch.zeros(shape, device=dev, dtype=dt) for _ in range(c["layers"])]
        self.v = [torch.zeros(shape, device=dev, dtype=dt) for _ in range(c["layers"])]
        self.tok = torch.zeros(B, dtype=torch.long, device=dev)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        self.slots = torch.arange(S, device=dev)
        self.graph = None
        self.prefills = {}  # prompt length -> (graph, static ids [B, L], static positions [L])


class Engine:
    def __init__(self, model_path: str) -> None:
        with open(os.path.join(model_path, "config.json")) as fh:
            cfg = json.load(fh)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        rope = cfg.get("rope_parameters") or {}
        self.c = c = {
            "hidden": cfg["hidden_size"], "layers": cfg["num_hidden_layers"], "hq": cfg["num_attention_heads"],
            "kv": cfg["num_key_value_heads"], "ffn": cfg["intermediate_size"], "eps": cfg.get("rms_norm_eps", 1e-6),
            "theta": float(cfg.get("rope_theta", rope.get("rope_theta", 1e6))),
        }
        c["d"] = cfg.get("head_dim") or c["hidden"] // c["hq"]
        raw = _load_dir(model_path)
        W = lambda name: raw.pop(name).to(self.device, self.dtype)
        self.embed = W("model.embed_tokens.weight")
        self.lm_head = W("lm_head.weight") if "lm_head.weight" in raw and not cfg.get("tie_word_embeddings") else self.embed
        self.norm = W("model.norm.weight")
        self.layers = []
        for i in range(c["layers"]):
            p = f"model.layers.{i}."
            self.layers.append({
                "ln1": W(p + "input_layernorm.weight"), "ln2": W(p + "post_attention_layernorm.weight"),
                "qkv": torch.cat([W(p + f"self_attn.{n}_proj.weight") for n in "qkv"]),
                "o": W(p + "self_attn.o_proj.weight"),
                "qn": W(p + "self_attn.q_norm.weight"), "kn": W(p + "self_attn.k_norm.weight"),
                "gu": torch.cat([W(p + "mlp.gate_proj.weight"), W(p + "mlp.up_proj.weight")]),
                "down": W(p + "mlp.down_proj.weight"),
            })
        del raw
        self.states = {}
        self._rope(4096)

    def _rope(self, n):
        d = self.c["d"]
        inv = 1.0 / (self.c["theta"] ** (torch.arange(0, d, 2, dtype=torch.int64, device=self.device).float() / d))
        f = torch.arange(n, device=self.device, dtype=torch.float32)[:, None] * inv[None]
        emb = torch.cat((f, f), -1)
        self.cos, self.sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    def _forward(self, st, ids, pos):
        """ids [B, T] at positions pos [T] (device); writes the cache; returns logits of the last position."""
        c = self.c
        B, T = ids.shape
        hq, kv, d, eps = c["hq"], c["kv"], c["d"], c["eps"]
        g = hq // kv
        cos, sin = self.cos[pos], self.sin[pos]  # [T, d]
        # additive mask over every cache slot: slot s is visible to the token at position p iff s <= p
        mask = torch.zeros((T, st.slots.shape[0]), device=self.device, dtype=torch.float32)
        mask = mask.masked_fill(st.slots[None, :] > pos[:, None], float("-inf"))
        x = F.embedding(ids, self.embed)
        for i, L in enumerate(self.layers):
            h = _rms(x, L["ln1"], eps)
            qkv = F.linear(h, L["qkv"])
            q = qkv[..., : hq * d].view(B, T, hq, d)
            k = qkv[..., hq * d:(hq + kv) * d].view(B, T, kv, d)
            v = qkv[..., (hq + kv) * d:].view(B, T, kv, d)
            q = _rms(q, L["qn"], eps).transpose(1, 2)
            k = _rms(k, L["kn"], eps).transpose(1, 2)
            q = q * cos + _rot(q) * sin
            k = k * cos + _rot(k) * sin
            st.k[i].index_copy_(2, pos, k)
            st.v[i].index_copy_(2, pos, v.transpose(1, 2))
            # GQA without copying K/V: the g query heads of a KV head share one matmul
            qg = q.reshape(B, kv, g * T, d)
            s = torch.matmul(qg, st.k[i].transpose(-1, -2)) * (d ** -0.5)
            s = s.view(B, kv, g, T, -1).float() + mask
            a = torch.matmul(torch.softmax(s, -1).to(self.dtype).view(B, kv, g * T, -1), st.v[i])
            a = a.view(B, hq, T, d).transpose(1, 2).reshape(B, T, hq * d)
            x = x + F.linear(a, L["o"])
            h = _rms(x, L["ln2"], eps)
            gu = F.linear(h, L["gu"])
            x = x + F.linear(F.silu(gu[..., : c["ffn"]]) * gu[..., c["ffn"]:], L["down"])
        return F.linear(_rms(x[:, -1], self.norm, eps), self.lm_head)

    def _step(self, st):
        logits = self._forward(st, st.tok.view(-1, 1), st.pos)
        st.tok.copy_(logits.argmax(-1))
        st.pos.add_(1)

    def _capture(self, st):
        saved_tok, saved_pos = st.tok.clone(), st.pos.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up outside the graph (allocator, cuBLAS handles)
                self._step(st)
        torch.cuda.current_stream().wait_stream(stream)
        st.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(st.graph):
            self._step(st)
        st.tok.copy_(saved_tok)
        st.pos.copy_(saved_pos)  # slots the warm-up wrote are rewritten before they are read

    def _prefill(self, st, ids, pos):
        logits = self._forward(st, ids, pos)
        st.tok.copy_(logits.argmax(-1))

    def _capture_prefill(self, st, B, L):
        ids = torch.zeros((B, L), dtype=torch.long, device=self.device)
        pos = torch.arange(L, device=self.device)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up outside the graph (allocator, cuBLAS handles)
                self._prefill(st, ids, pos)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._prefill(st, ids, pos)
        # the cache slots the warm-ups wrote are the prompt's, rewritten by every replay
        st.prefills[L] = (graph, ids, pos)
        return st.prefills[L]

    @torch.inference_mode()
    def generate(self, input_ids, max_new_tokens):
        B, L = len(input_ids), len(input_ids[0])
        S = L + max_new_tokens
        if S > self.cos.shape[0]:
            self._rope(S)
            self.states.clear()
        st = self.states.get((B, S))
        if st is None:
            st = self.states[(B, S)] = _State(self, B, S)
        ids = torch.tensor(input_ids, dtype=torch.long, device=self.device)
        if self.device == "cuda":
            graph, static_ids, _ = st.prefills.get(L) or self._capture_prefill(st, B, L)
            static_ids.copy_(ids)
            graph.replay()
        else:
            self._prefill(st, ids, torch.arange(L, device=self.device))
        st.pos.fill_(L)
        first = st.tok.tolist()
        if self.device != "cuda":
            yield first
            for _ in range(max_new_tokens - 1):
                self._step(st)
                yield st.tok.tolist()
            return
        if st.graph is None and max_new_tokens > 1:
            self._capture(st)
        host = torch.empty((max_new_tokens, B), dtype=torch.long, pin_memory=True)
        done = [torch.cuda.Event() for _ in range(max_new_tokens)]
        try:
            for t in range(1, max_new_tokens):
                st.graph.replay()  # step t runs on the GPU while step t-1 is handed over below
                host[t].copy_(st.tok, non_blocking=True)
                done[t].record()
                if t == 1:
                    yield first
                else:
                    done[t - 1].synchronize()
                    yield host[t - 1].tolist()
        except GeneratorExit:
            # closed before its last step (the harness stops the reference's clock early): the step
            # queued ahead must not run into whatever the GPU does next
            torch.cuda.synchronize()
            raise
        if max_new_tokens > 1:
            done[max_new_tokens - 1].synchronize()
            yield host[max_new_tokens - 1].tolist()
        else:
            yield first
