// llama.cpp's logits at every position of a token list, for test/data/llm-logits: loads a GGUF on
// the CPU, evaluates the tokens as ONE batch (one sequence, positions 0..n-1, logits requested at
// every position) with one thread, and writes u32 n_tokens, u32 n_vocab, then n_tokens * n_vocab
// float32 logits (row per position, little-endian) to stdout.
//
//   logits-ref <backend dir> <model.gguf> <token id>...
//
// The plainest computation llama.cpp offers, so that our engine is compared with ggml's arithmetic
// and not with its optional paths: flash attention off (K*Q, softmax, V*KQ as separate ops), an
// F32 K/V cache (the default F16 cache would round every key and value), no weight repacking
// (use_extra_bufts off: the repacked Q4_0 / Q4_K kernels are other code), no GPU. What stays is
// inherent to ggml's CPU matmuls: a quantized weight matrix multiplies activations quantized to its
// vec_dot_type (Q8_0 for Q8_0 / Q4_0, Q8_K for the K-quants), F16 weights multiply activations
// rounded to F16, BF16 weights activations rounded to BF16. Built and run by record-logits.mjs
// against node-llama-cpp's prebuilt libllama and the headers of the same llama.cpp release.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char * text, void * user) {
    (void) user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s <backend dir> <model.gguf> <token id>...\n", argv[0]);
        return 2;
    }
    const int n_tokens = argc - 3;

    llama_log_set(quiet, NULL);
    // node-llama-cpp's libggml loads its CPU backend (the variant for this CPU) from a directory.
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = false;
    mp.check_tensors = true;
    struct llama_model * model = llama_model_load_from_file(argv[2], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[2]);
        return 3;
    }
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_tokens < 64 ? 64 : (uint32_t) n_tokens;
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx;
    cp.n_seq_max = 1;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.offload_kqv = false;
    cp.op_offload = false;
    cp.no_perf = true;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot create a context\n");
        return 4;
    }

    struct llama_batch batch = llama_batch_init(n_tokens, 0, 1);
    for (int i = 0; i < n_tokens; i++) {
        char * end = NULL;
        const long id = strtol(argv[3 + i], &end, 10);
        if (*end != '\0' || id < 0 || id >= n_vocab) {
            fprintf(stderr, "bad token id %s (vocabulary of %d)\n", argv[3 + i], n_vocab);
            return 5;
        }
        batch.token[i] = (llama_token) id;
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n_tokens;
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "llama_decode failed\n");
        return 6;
    }

    const uint32_t header[2] = { (uint32_t) n_tokens, (uint32_t) n_vocab };
    fwrite(header, sizeof header, 1, stdout);
    for (int i = 0; i < n_tokens; i++) {
        const float * row = llama_get_logits_ith(ctx, i);
        if (!row) {
            fprintf(stderr, "no logits at position %d\n", i);
            return 7;
        }
        fwrite(row, sizeof(float), (size_t) n_vocab, stdout);
    }

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
