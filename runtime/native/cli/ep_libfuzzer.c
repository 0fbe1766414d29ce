/* libFuzzer target of the plan loader (and, with EP_FUZZ_RUN set in the environment, the executor): each input is a
   plan. It is copied to aligned memory and opened; every input and output the core then reports must lie in the arena
   (their bytes are written); with EP_FUZZ_RUN an accepted plan is also run once on inputs filled from the plan's first
   byte. One binary serves both targets (the sanitized build of the whole core is the costly part), the environment
   read once, at libFuzzer's initialization. A refusal or a failed run must come with a message. Built with
   -fsanitize=fuzzer,address,undefined (runtime/native/build.py: libfuzzer()): any report aborts. */
#include <stdlib.h>
#include <string.h>

#include "../include/edgepack.h"

#define MAX_MEMORY ((size_t)1 << 20)

static int runs_plans;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    runs_plans = getenv("EP_FUZZ_RUN") != 0;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *plan = aligned_alloc(EP_MEMORY_ALIGN, (size + EP_MEMORY_ALIGN) / EP_MEMORY_ALIGN * EP_MEMORY_ALIGN);
    if (!plan) return 0;
    if (size) memcpy(plan, data, size);
    size_t needed = 0;
    if (ep_required_bytes(plan, size, &needed) == EP_OK && needed <= MAX_MEMORY) {
        void *memory = aligned_alloc(EP_MEMORY_ALIGN, (needed + EP_MEMORY_ALIGN) / EP_MEMORY_ALIGN * EP_MEMORY_ALIGN);
        ep_session *session = 0;
        if (memory && ep_open(plan, size, memory, needed, &session) == EP_OK) {
            for (size_t i = 0; i < ep_input_count(session); i++) {
                ep_tensor_info info;
                if (ep_input(session, i, &info) == EP_OK) memset(info.data, size ? data[0] & 1 : 0, info.bytes);
            }
            for (size_t i = 0; i < ep_output_count(session); i++) {
                ep_tensor_info info;
                if (ep_output(session, i, &info) == EP_OK) memset(info.data, 0, info.bytes);
                if (ep_output_index(session, info.name, info.name_len) < 0) abort(); /* its own name finds it */
            }
            if (runs_plans) {
                for (size_t i = 0; i < ep_input_count(session); i++) {
                    ep_tensor_info info;
                    if (ep_input(session, i, &info) == EP_OK) memset(info.data, size ? data[0] & 1 : 0, info.bytes);
                }
                if (ep_run(session) != EP_OK && ep_error(session)[0] == 0) abort(); /* a failed run must say why */
            }
        } else if (memory && ep_open_error(memory, needed)[0] == 0) {
            abort(); /* a refusal must say why */
        }
        free(memory);
    }
    free(plan);
    return 0;
}
