"""What the llama.cpp group's scripts share: the metadata of a llama-shaped
GGUF they write with gguf-py (quantize_compare.py, llama_mixes.py)."""
import gguf


def llama_writer(path, dim, ff, layers, heads, kv_heads, vocab):
    """A GGUFWriter with llama's hyperparameters set; add tensors, then write."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(128)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(dim // heads)
    w.add_vocab_size(vocab)
    w.add_file_type(1)
    return w


def write(w):
    """Writes what llama_writer's w holds and closes it."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
