/* ep_fuzz: seeded mutation fuzzing of the plan loader and executor. Each round copies one of the seed plans,
   mutates it (bit flips, overwritten words with boundary values, truncation), opens it and, when the core accepts
   it, runs it. Meant to run under AddressSanitizer + UndefinedBehaviorSanitizer: any report aborts.
   usage: ep_fuzz SECONDS SEED PLAN.epk...   (prints rounds, accepted and ran counts) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/edgepack.h"

#define MAX_MEMORY ((size_t)256 << 20)

static uint64_t next(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static void *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return 0;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    void *data = malloc((size_t)size);
    if (data && fread(data, 1, (size_t)size, file) != (size_t)size) {
        free(data);
        data = 0;
    }
    fclose(file);
    *length = (size_t)size;
    return data;
}

static void mutate(uint8_t *plan, size_t *length, uint64_t *state) {
    static const uint32_t boundaries[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 63, 64, 255, 0x7FFF, 0xFFFF, 0x7FFFFFFF,
                                          0x80000000u, 0xFFFFFFFFu, 0xFFFFFFFEu, 1000000, 96, 48};
    int rounds = 1 + (int)(next(state) % 8);
    for (int r = 0; r < rounds && *length > 0; r++) {
        size_t at = next(state) % *length;
        switch (next(state) % 5) {
        case 0: plan[at] ^= (uint8_t)(1u << (next(state) % 8)); break;
        case 1: plan[at] = (uint8_t)next(state); break;
        case 2:
            if (at + 4 <= *length) {
                uint32_t value = boundaries[next(state) % (sizeof boundaries / sizeof boundaries[0])];
                memcpy(plan + (at & ~(size_t)3), &value, 4 <= *length - (at & ~(size_t)3) ? 4 : 0);
            }
            break;
        case 3: /* header words are the likeliest to matter */
            if (*length >= 96) {
                uint32_t value = (next(state) & 1) ? (uint32_t)next(state) % 4096 :
                                 boundaries[next(state) % (sizeof boundaries / sizeof boundaries[0])];
                memcpy(plan + 4 * (next(state) % 24), &value, 4);
            }
            break;
        default: *length = at; break;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ep_fuzz SECONDS SEED PLAN.epk...\n");
        return 2;
    }
    double seconds = atof(argv[1]);
    uint64_t state = (uint64_t)strtoull(argv[2], 0, 10) * 2654435761u + 88172645463325252ull;
    int seeds = argc - 3;
    uint8_t **plans = calloc((size_t)seeds, sizeof *plans);
    size_t *lengths = calloc((size_t)seeds, sizeof *lengths);
    size_t longest = 0;
    for (int i = 0; i < seeds; i++) {
        plans[i] = read_file(argv[3 + i], &lengths[i]);
        if (!plans[i]) {
            fprintf(stderr, "ep_fuzz: cannot read %s\n", argv[3 + i]);
            return 2;
        }
        longest = lengths[i] > longest ? lengths[i] : longest;
    }
    uint8_t *work = aligned_alloc(64, (longest + 63) / 64 * 64);
    long rounds = 0, accepted = 0, ran = 0;
    time_t start = time(0);
    while (difftime(time(0), start) < seconds) {
        int pick = (int)(next(&state) % (uint64_t)seeds);
        size_t length = lengths[pick];
        memcpy(work, plans[pick], length);
        mutate(work, &length, &state);
        rounds++;
        size_t needed = 0;
        if (ep_required_bytes(work, length, &needed) != EP_OK || needed > MAX_MEMORY) continue;
        void *memory = aligned_alloc(64, (needed + 63) / 64 * 64);
        ep_session *session = 0;
        if (ep_open(work, length, memory, needed, &session) == EP_OK) {
            accepted++;
            for (size_t i = 0; i < ep_input_count(session); i++) {
                ep_tensor_info info;
                ep_input(session, i, &info);
                memset(info.data, (int)(next(&state) & 1), info.bytes);
            }
            if (ep_run(session) == EP_OK) ran++;
        } else if (ep_open_error(memory, needed)[0] == 0) {
            fprintf(stderr, "ep_fuzz: a refusal without a message\n");
            return 1;
        }
        free(memory);
    }
    printf("rounds %ld accepted %ld ran %ld\n", rounds, accepted, ran);
    for (int i = 0; i < seeds; i++) free(plans[i]);
    free(plans);
    free(lengths);
    free(work);
    return 0;
}
