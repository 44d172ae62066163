"""The models of the model zoo (tests/e2e/model_zoo.py), small.

torchvision's models are built by their own constructors, at reduced widths
or depths where the constructor takes them. The transformers are our own
code, written the way their authors write them (HuggingFace's GPT-2, BERT,
Llama and T5, Karpathy's nanoGPT) at toy sizes, because the point is the
op patterns their exporters produce: fused QKV projections, head splits,
masks from buffers, rotary tables, relative position buckets, tied heads.

Every model here must run the same on PyTorch 1.13 (Debian's, the CI tier)
and on current PyTorch (tests/zoo/run_current_pytorch.sh).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models import convnext as tv_convnext
from torchvision.models import densenet as tv_densenet
from torchvision.models import vgg as tv_vgg

CLASSES = 10
VOCAB, SEQ, D_MODEL, HEADS, LAYERS = 64, 16, 32, 4, 2


# ---------------------------------------------------------------- vision --

def resnet18():
    return torchvision.models.resnet18(num_classes=CLASSES)


def mobilenet_v2():
    return torchvision.models.mobilenet_v2(num_classes=CLASSES, width_mult=0.25)


def mobilenet_v3_small():
    return torchvision.models.mobilenet_v3_small(num_classes=CLASSES,
                                                 width_mult=0.25)


def efficientnet_b0():
    # B0 has no width knob; stochastic depth draws random numbers that
    # PyTorch and tcc cannot share, so it is off (dropout too, below).
    return torchvision.models.efficientnet_b0(num_classes=CLASSES,
                                              stochastic_depth_prob=0.0)


def squeezenet1_1():
    return torchvision.models.squeezenet1_1(num_classes=CLASSES)


def densenet_small():
    # densenet121's layers and transitions at 4 blocks of 2 layers,
    # growth 8: the same op mix (concatenating dense blocks, average-pool
    # transitions) in a fraction of the compile time.
    return tv_densenet.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2),
                                num_init_features=16, bn_size=2,
                                num_classes=CLASSES)


def shufflenet_v2_x0_5():
    return torchvision.models.shufflenet_v2_x0_5(num_classes=CLASSES)


def regnet_y_400mf():
    return torchvision.models.regnet_y_400mf(num_classes=CLASSES)


def convnext_tiny_cfg():
    # convnext_tiny's blocks (depthwise 7x7, channels-last LayerNorm, GELU
    # MLP, layer scale) at widths 16..128 and one block per stage;
    # convnext_tiny itself (28M parameters) takes minutes to compile.
    C = tv_convnext.CNBlockConfig
    return tv_convnext.ConvNeXt(
        [C(16, 32, 1), C(32, 64, 1), C(64, 128, 1), C(128, None, 1)],
        stochastic_depth_prob=0.0, num_classes=CLASSES)


def vgg11_small():
    # VGG-11's layer pattern at a quarter of the width. At 32x32 the
    # features end at 1x1, which the 7x7 adaptive pool cannot be exported
    # from, and the 4096-wide classifier alone has 120M parameters: both
    # are scaled to the input (same layers, fewer units).
    cfg = [16, "M", 32, "M", 64, 64, "M", 128, 128, "M", 128, 128, "M"]
    m = tv_vgg.VGG(tv_vgg.make_layers(cfg, batch_norm=False),
                   num_classes=CLASSES)
    m.avgpool = nn.AdaptiveAvgPool2d((1, 1))
    m.classifier = nn.Sequential(
        nn.Linear(128, 64), nn.ReLU(True), nn.Dropout(),
        nn.Linear(64, 64), nn.ReLU(True), nn.Dropout(),
        nn.Linear(64, CLASSES))
    return m


def googlenet():
    return torchvision.models.googlenet(num_classes=CLASSES, aux_logits=False,
                                        init_weights=True,
                                        transform_input=False)


def vit_tiny():
    return torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
        mlp_dim=64, num_classes=CLASSES)


# ------------------------------------------------------- GPT-2 (HF style) --

class Conv1D(nn.Module):
    """HF's Conv1D: a linear layer with the weight stored transposed."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, d, heads, n_ctx):
        super().__init__()
        self.register_buffer("bias", torch.tril(
            torch.ones((n_ctx, n_ctx), dtype=torch.bool)).view(1, 1, n_ctx, n_ctx),
            persistent=False)
        self.num_heads, self.head_dim = heads, d // heads
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype),
                                   mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(
            self.num_heads * self.head_dim, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        attn_output = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        return self.c_proj(attn_output)


class GPT2MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = Conv1D(4 * d, d)
        self.c_proj = Conv1D(d, 4 * d)

    def forward(self, hidden_states):
        return self.c_proj(gelu_new(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    def __init__(self, d, heads, n_ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-5)
        self.attn = GPT2Attention(d, heads, n_ctx)
        self.ln_2 = nn.LayerNorm(d, eps=1e-5)
        self.mlp = GPT2MLP(d)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = residual + self.attn(self.ln_1(hidden_states))
        residual = hidden_states
        return residual + self.mlp(self.ln_2(hidden_states))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, vocab=VOCAB, n_ctx=SEQ, d=D_MODEL, heads=HEADS,
                 layers=LAYERS):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(n_ctx, d)
        self.h = nn.ModuleList([GPT2Block(d, heads, n_ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d, eps=1e-5)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as HF's tie_weights()

    def forward(self, input_ids):
        input_shape = input_ids.size()
        # A Reshape of the run-time token ids in the export.
        input_ids = input_ids.view(-1, input_shape[-1])
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        hidden_states = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.lm_head(self.ln_f(hidden_states))


# -------------------------------------------------------- BERT (HF style) --

class BertEmbeddings(nn.Module):
    def __init__(self, vocab, d, max_pos, type_vocab=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, d)
        self.token_type_embeddings = nn.Embedding(type_vocab, d)
        self.LayerNorm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(0.0)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size()[1]
        position_ids = self.position_ids[:, 0:seq_length]
        embeddings = self.word_embeddings(input_ids)
        embeddings = embeddings + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = d // heads
        self.all_head_size = d
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.dropout = nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads,
                                       self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.attention = BertSelfAttention(d, heads)
        self.attention_output = nn.Linear(d, d)
        self.attention_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, 4 * d)
        self.output = nn.Linear(4 * d, d)
        self.output_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, hidden_states, attention_mask):
        attn = self.attention_output(self.attention(hidden_states, attention_mask))
        attn = self.attention_norm(attn + hidden_states)
        inter = nn.functional.gelu(self.intermediate(attn))  # erf GELU
        return self.output_norm(self.output(inter) + attn)


class BertForMaskedLM(nn.Module):
    def __init__(self, vocab=VOCAB, d=D_MODEL, heads=HEADS, layers=LAYERS,
                 max_pos=SEQ):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, d, max_pos)
        self.layer = nn.ModuleList([BertLayer(d, heads) for _ in range(layers)])
        self.transform = nn.Linear(d, d)
        self.transform_norm = nn.LayerNorm(d, eps=1e-12)
        self.decoder = nn.Linear(d, vocab, bias=False)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))
        self.decoder.weight = self.embeddings.word_embeddings.weight

    def forward(self, input_ids, token_type_ids, attention_mask):
        # 1 keeps a key, 0 masks it additively. The keep mask is indexed
        # per (batch, key) as transformers 5's masking_utils does (a
        # Flatten and Gather of a bool tensor in the export).
        dtype = self.transform.weight.dtype
        batch, keys = attention_mask.shape
        keep = attention_mask.bool()[torch.arange(batch)[:, None, None, None],
                                     torch.arange(keys)[None, None, None, :]]
        extended = keep.to(dtype=dtype)
        extended = (1.0 - extended) * torch.finfo(dtype).min
        hidden = self.embeddings(input_ids, token_type_ids)
        for layer in self.layer:
            hidden = layer(hidden, extended)
        hidden = self.transform_norm(nn.functional.gelu(self.transform(hidden)))
        return self.decoder(hidden) + self.decoder_bias


# ------------------------------------------------------- Llama (HF style) --

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    """The cached cos/sin tables of transformers 4.3x."""

    def __init__(self, dim, max_position_embeddings, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        t = torch.arange(max_position_embeddings, dtype=inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None, :, :],
                             persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None, :, :],
                             persistent=False)

    def forward(self, x, seq_len):
        return (self.cos_cached[:, :, :seq_len, ...].to(dtype=x.dtype),
                self.sin_cached[:, :, :seq_len, ...].to(dtype=x.dtype))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos.squeeze(1).squeeze(0)  # [seq_len, dim]
    sin = sin.squeeze(1).squeeze(0)
    cos = cos[position_ids].unsqueeze(1)  # [bs, 1, seq_len, dim]
    sin = sin[position_ids].unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads, max_pos):
        super().__init__()
        self.num_heads, self.head_dim = heads, d // heads
        self.num_key_value_heads = kv_heads
        self.num_key_value_groups = heads // kv_heads
        self.q_proj = nn.Linear(d, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, d, bias=False)
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, max_pos)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(
            bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(
            bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(
            bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, seq_len=q_len)
        query_states, key_states = apply_rotary_pos_emb(
            query_states, key_states, cos, sin, position_ids)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / \
            math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1,
                                             dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.num_heads * self.head_dim)
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, d, inter):
        super().__init__()
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, max_pos):
        super().__init__()
        self.self_attn = LlamaAttention(d, heads, kv_heads, max_pos)
        self.mlp = LlamaMLP(d, 3 * d)
        self.input_layernorm = LlamaRMSNorm(d)
        self.post_attention_layernorm = LlamaRMSNorm(d)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states),
                                       attention_mask, position_ids)
        hidden_states = residual + hidden_states
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


def _make_causal_mask(bsz, tgt_len, dtype):
    """transformers 4.3x's _make_causal_mask (no past key values)."""
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, dtype=dtype)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab=VOCAB, d=D_MODEL, heads=HEADS, kv_heads=2,
                 layers=LAYERS, max_pos=SEQ):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaDecoderLayer(d, heads, kv_heads, max_pos)
                                     for _ in range(layers)])
        self.norm = LlamaRMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        batch_size, seq_length = input_ids.shape
        position_ids = torch.arange(0, seq_length, dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).view(-1, seq_length)
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = _make_causal_mask(batch_size, seq_length, inputs_embeds.dtype)
        hidden_states = inputs_embeds
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, position_ids)
        return self.lm_head(self.norm(hidden_states))


# ---------------------------------------------------------- T5 (HF style) --

class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class T5Attention(nn.Module):
    def __init__(self, d, heads, has_relative_attention_bias,
                 num_buckets=8, max_distance=16):
        super().__init__()
        self.n_heads, self.key_value_proj_dim = heads, d // heads
        self.inner_dim = d
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = num_buckets
        self.relative_attention_max_distance = max_distance
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True,
                                  num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position,
                                           torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large,
            torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position,
                                        relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position, bidirectional=True,
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, position_bias):
        batch_size, seq_length = hidden_states.shape[:2]

        def shape(states):
            return states.view(batch_size, -1, self.n_heads,
                               self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1,
                                                            self.inner_dim)

        query_states = shape(self.q(hidden_states))
        key_states = shape(self.k(hidden_states))
        value_states = shape(self.v(hidden_states))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            position_bias = self.compute_bias(seq_length, seq_length)
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        return self.o(attn_output), position_bias


class T5Block(nn.Module):
    def __init__(self, d, heads, has_relative_attention_bias):
        super().__init__()
        self.SelfAttention = T5Attention(d, heads, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(d)
        self.ff_layer_norm = T5LayerNorm(d)
        self.wi = nn.Linear(d, 2 * d, bias=False)
        self.wo = nn.Linear(2 * d, d, bias=False)

    def forward(self, hidden_states, position_bias):
        attn, position_bias = self.SelfAttention(self.layer_norm(hidden_states),
                                                 position_bias)
        hidden_states = hidden_states + attn
        ff = self.wo(nn.functional.relu(self.wi(self.ff_layer_norm(hidden_states))))
        return hidden_states + ff, position_bias


class T5EncoderLM(nn.Module):
    """T5's encoder stack (the first block owns the relative position
    bias, the others reuse it) under a tied, rescaled LM head."""

    def __init__(self, vocab=VOCAB, d=D_MODEL, heads=HEADS, layers=LAYERS):
        super().__init__()
        self.model_dim = d
        self.shared = nn.Embedding(vocab, d)
        self.block = nn.ModuleList([T5Block(d, heads, i == 0) for i in range(layers)])
        self.final_layer_norm = T5LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.shared.weight

    def forward(self, input_ids):
        hidden_states = self.shared(input_ids)
        position_bias = None
        for block in self.block:
            hidden_states, position_bias = block(hidden_states, position_bias)
        sequence_output = self.final_layer_norm(hidden_states)
        sequence_output = sequence_output * (self.model_dim ** -0.5)
        return self.lm_head(sequence_output)


# ------------------------------------------------------------- nanoGPT --

class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, bias=True):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head, self.n_embd = n_head, n_embd
        # nanoGPT takes the flash path where PyTorch has it (2.0 and later)
        # and its manual masked path before.
        self.flash = hasattr(torch.nn.functional, "scaled_dot_product_attention")
        if not self.flash:
            self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd, bias=True):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias=True)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = LayerNorm(n_embd, bias=True)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, vocab_size=VOCAB, block_size=SEQ, n_embd=D_MODEL,
                 n_head=HEADS, n_layer=LAYERS):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, bias=True)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = tok_emb + pos_emb
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        return self.lm_head(x)
