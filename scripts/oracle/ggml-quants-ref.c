// Reference blocks from ggml itself, for test/data/ggml-quants-reference.json: reads a count n and
// n float32 values on stdin, and for each tensor type writes (u32 byte count, the quantized row as
// ggml_quantize_chunk makes it, n float32 values as the type's to_float gives them back) to stdout.
// Built and run by record.mjs against node-llama-cpp's libggml-base and the headers of the same
// llama.cpp release.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml.h"

int main(void) {
    int32_t n = 0;
    if (fread(&n, sizeof n, 1, stdin) != 1 || n <= 0 || n % 256 != 0) return 2;
    float * x = malloc(sizeof(float) * n);
    float * y = malloc(sizeof(float) * n);
    if (fread(x, sizeof(float), n, stdin) != (size_t) n) return 3;

    // The order of record.mjs's `types`.
    const enum ggml_type types[] = { GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K,
                                     GGML_TYPE_Q5_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q5_K,
                                     GGML_TYPE_Q4_1, GGML_TYPE_Q5_1, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_MXFP4 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const enum ggml_type t = types[i];
        const size_t size = ggml_row_size(t, n);
        void * q = malloc(size);
        ggml_quantize_init(t);
        if (ggml_quantize_chunk(t, x, q, 0, 1, n, NULL) != size) return 4;
        ggml_get_type_traits(t)->to_float(q, y, n);
        const uint32_t size32 = (uint32_t) size;
        fwrite(&size32, sizeof size32, 1, stdout);
        fwrite(q, 1, size, stdout);
        fwrite(y, sizeof(float), n, stdout);
        free(q);
    }
    free(x);
    free(y);
    return 0;
}
