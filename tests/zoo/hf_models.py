"""Hugging Face transformers' own model classes at toy sizes, for the model
zoo's optional tier (tests/zoo/run_current_pytorch.sh runs
tests/e2e/model_zoo.py --set transformers with these).

tests/e2e/zoo_models.py writes the same architectures in their authors'
style so that Debian's PyTorch 1.13 (ctest, CI) can export them; these are
the real classes of the installed `transformers`, exported by current
PyTorch, so what a user gets from `AutoModel...` is what is measured.

Every config turns dropout off (p = 0: its random draws cannot match
PyTorch's) and the KV cache off (training graphs have none). Attention is
each class's default implementation (SDPA in transformers 4.4x and later).
Each model is wrapped so that the exported graph has one output, `logits`,
and takes its inputs positionally in the order of the data's dict.
"""
import torch
import torch.nn as nn
import transformers as hf

VOCAB, SEQ, D, HEADS, LAYERS, FF, CLASSES = 128, 16, 32, 4, 2, 64, 10


class Logits(nn.Module):
    """model(**inputs).logits, with the inputs given positionally."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = list(names)

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args))).logits


def gpt2():
    c = hf.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=D,
                      n_layer=LAYERS, n_head=HEADS, n_inner=FF,
                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                      bos_token_id=0, eos_token_id=0, use_cache=False)
    return Logits(hf.GPT2LMHeadModel(c), ["input_ids", "attention_mask"])


def bert_mlm():
    c = hf.BertConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, intermediate_size=FF,
                      max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)
    return Logits(hf.BertForMaskedLM(c),
                  ["input_ids", "token_type_ids", "attention_mask"])


def distilbert_cls():
    c = hf.DistilBertConfig(vocab_size=VOCAB, dim=D, n_layers=LAYERS,
                            n_heads=HEADS, hidden_dim=FF,
                            max_position_embeddings=SEQ, dropout=0.0,
                            attention_dropout=0.0, seq_classif_dropout=0.0,
                            num_labels=CLASSES)
    return Logits(hf.DistilBertForSequenceClassification(c),
                  ["input_ids", "attention_mask"])


def _decoder_config(cls, **kw):
    return cls(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF,
               num_hidden_layers=LAYERS, num_attention_heads=HEADS,
               num_key_value_heads=HEADS // 2, max_position_embeddings=SEQ,
               attention_dropout=0.0, use_cache=False,
               tie_word_embeddings=False, **kw)


def llama():
    return Logits(hf.LlamaForCausalLM(_decoder_config(hf.LlamaConfig)),
                  ["input_ids", "attention_mask"])


def qwen2():
    # Qwen2 is Llama with biases on the q, k and v projections.
    return Logits(hf.Qwen2ForCausalLM(_decoder_config(hf.Qwen2Config)),
                  ["input_ids", "attention_mask"])


def mistral():
    return Logits(hf.MistralForCausalLM(_decoder_config(
        hf.MistralConfig, sliding_window=None)), ["input_ids", "attention_mask"])


def t5(attn_implementation=None):
    c = hf.T5Config(vocab_size=VOCAB, d_model=D, d_kv=D // HEADS, d_ff=FF,
                    num_layers=LAYERS, num_decoder_layers=LAYERS,
                    num_heads=HEADS, relative_attention_num_buckets=8,
                    relative_attention_max_distance=16, dropout_rate=0.0,
                    decoder_start_token_id=0, pad_token_id=0, use_cache=False)
    model = hf.T5ForConditionalGeneration(c)
    if attn_implementation:
        model.set_attn_implementation(attn_implementation)
    return Logits(model, ["input_ids", "decoder_input_ids"])


def t5_eager():
    # PyTorch 2.15's dynamo exporter fails on T5 with SDPA attention (its
    # decompositions turn T5's reshape of the transposed attention output
    # into a view of non-contiguous strides); eager attention exports.
    return t5("eager")


def vit():
    c = hf.ViTConfig(image_size=32, patch_size=8, num_channels=3,
                     hidden_size=D, num_hidden_layers=LAYERS,
                     num_attention_heads=HEADS, intermediate_size=FF,
                     hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, num_labels=CLASSES)
    return Logits(hf.ViTForImageClassification(c), ["pixel_values"])


# ------------------------------------------------------------------ data --

def _masked(batch):
    ids = torch.randint(1, VOCAB, (batch, SEQ))
    mask = torch.ones(batch, SEQ, dtype=torch.long)
    # The last sequence is padded: its last 5 keys are masked. Its ids
    # there are not the pad id 0 (see bert_inputs in tests/e2e/model_zoo.py).
    mask[-1, -5:] = 0
    return ids, mask


def bert_inputs(batch):
    def data():
        ids, mask = _masked(batch)
        types = torch.zeros(batch, SEQ, dtype=torch.long)
        types[:, SEQ // 2:] = 1  # sentence B
        return ({"input_ids": ids, "token_type_ids": types,
                 "attention_mask": mask},
                torch.randint(0, VOCAB, (batch, SEQ)))
    return data


def lm_tokens(batch):
    # A decoder's training batch has its attention mask (a tokenizer's
    # output): without one, transformers 5 looks for packed sequences in
    # the position ids with torch.diff, which the TorchScript exporter
    # cannot export (aten::diff).
    def data():
        ids, mask = _masked(batch)
        return ({"input_ids": ids, "attention_mask": mask},
                torch.randint(0, VOCAB, (batch, SEQ)))
    return data


def classify_inputs(batch):
    def data():
        ids, mask = _masked(batch)
        return ({"input_ids": ids, "attention_mask": mask},
                torch.randint(0, CLASSES, (batch,)))
    return data


def seq2seq_inputs(batch):
    def data():
        # decoder_input_ids are the labels shifted right behind the start
        # token, as T5's _shift_right makes them (here given as an input).
        labels = torch.randint(1, VOCAB, (batch, SEQ // 2))
        dec = torch.cat([torch.zeros(batch, 1, dtype=torch.long),
                         labels[:, :-1]], dim=1)
        return ({"input_ids": torch.randint(1, VOCAB, (batch, SEQ)),
                 "decoder_input_ids": dec}, labels)
    return data


def image(batch):
    def data():
        return ({"pixel_values": torch.randn(batch, 3, 32, 32)},
                torch.randint(0, CLASSES, (batch,)))
    return data


# (name, build, data(batch)) in the order the tier runs them.
MODELS = [
    ("hf_gpt2", gpt2, lm_tokens),
    ("hf_bert_mlm", bert_mlm, bert_inputs),
    ("hf_distilbert_cls", distilbert_cls, classify_inputs),
    ("hf_llama", llama, lm_tokens),
    ("hf_qwen2", qwen2, lm_tokens),
    ("hf_mistral", mistral, lm_tokens),
    ("hf_t5", t5, seq2seq_inputs),
    ("hf_t5_eager", t5_eager, seq2seq_inputs),
    ("hf_vit", vit, image),
]


def describe():
    return f"transformers {hf.__version__}"
