/* Drives a bundle's JNI library as the generated Java class does, without a JVM: dlopen()s the .so, hands its entry
   points a JNIEnv whose four functions (FindClass, ThrowNew, GetDirectBufferAddress, GetDirectBufferCapacity) work
   on plain buffers, and runs the plan once.
   usage: jni_driver LIBRARY.so JNI_PREFIX PLAN.epk OUT_DIR INPUT.bin... -- OUTPUT_BYTES...
   Inputs are raw little-endian tensors in the plan's input order; outputs are written as OUT_DIR/<i>.bin. An
   exception thrown by the bridge is printed and exits 3. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_jni.h"

typedef struct { void *address; jlong capacity; } buffer;

static const char *thrown;

static jclass find_class(JNIEnv *env, const char *name) { (void)env; return (jclass)name; }
static jint throw_new(JNIEnv *env, jclass cls, const char *message) {
    (void)env;
    fprintf(stderr, "%s: %s\n", (const char *)cls, message);
    thrown = message;
    return 0;
}
static void *buffer_address(JNIEnv *env, jobject object) { (void)env; return ((buffer *)object)->address; }
static jlong buffer_capacity(JNIEnv *env, jobject object) { (void)env; return ((buffer *)object)->capacity; }

static void *entry(void *library, const char *prefix, const char *name) {
    char symbol[512];
    snprintf(symbol, sizeof symbol, "%s_%s", prefix, name);
    void *found = dlsym(library, symbol);
    if (!found) { fprintf(stderr, "no entry point %s\n", symbol); exit(2); }
    return found;
}

static buffer read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) { perror(path); exit(2); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    buffer read = {aligned_alloc(64, (size_t)size / 64 * 64 + 64), size};
    if (fread(read.address, 1, (size_t)size, file) != (size_t)size) { perror(path); exit(2); }
    fclose(file);
    return read;
}

#define CHECK() do { if (thrown) return 3; } while (0)

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: jni_driver LIBRARY.so JNI_PREFIX PLAN.epk OUT_DIR INPUT... -- BYTES...\n"); return 2; }
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    struct ep_jni_functions functions;
    memset(&functions, 0, sizeof functions);
    functions.FindClass = find_class;
    functions.ThrowNew = throw_new;
    functions.GetDirectBufferAddress = buffer_address;
    functions.GetDirectBufferCapacity = buffer_capacity;
    JNIEnv env = &functions;

    jint (*alignment)(JNIEnv *, jclass, jobject) = entry(library, argv[2], "nativeAlignment");
    jlong (*required_bytes)(JNIEnv *, jclass, jobject, jlong, jlong) = entry(library, argv[2], "nativeRequiredBytes");
    jlong (*open)(JNIEnv *, jclass, jobject, jlong, jlong, jobject, jlong, jlong) = entry(library, argv[2], "nativeOpen");
    jlong (*data_offset)(JNIEnv *, jclass, jobject, jlong, jboolean, jint, jlong) =
        entry(library, argv[2], "nativeDataOffset");
    void (*run)(JNIEnv *, jclass, jlong) = entry(library, argv[2], "nativeRun");

    buffer plan = read_file(argv[3]);
    jlong required = required_bytes(&env, 0, &plan, 0, plan.capacity);
    CHECK();
    buffer memory = {malloc((size_t)required + 64), required + 64};
    jint offset = alignment(&env, 0, &memory);
    jlong session = open(&env, 0, &plan, 0, plan.capacity, &memory, offset, required);
    CHECK();
    int separator = 5;
    while (separator < argc && strcmp(argv[separator], "--") != 0) separator++;
    for (int i = 5; i < separator; i++) {
        buffer input = read_file(argv[i]);
        jlong at = data_offset(&env, 0, &memory, session, 0, i - 5, input.capacity);
        CHECK();
        memcpy((char *)memory.address + at, input.address, (size_t)input.capacity);
    }
    run(&env, 0, session);
    CHECK();
    for (int i = separator + 1; i < argc; i++) {
        jlong bytes = atoll(argv[i]);
        jlong at = data_offset(&env, 0, &memory, session, 1, i - separator - 1, bytes);
        CHECK();
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.bin", argv[4], i - separator - 1);
        FILE *file = fopen(path, "wb");
        if (!file || fwrite((char *)memory.address + at, 1, (size_t)bytes, file) != (size_t)bytes) { perror(path); return 2; }
        fclose(file);
    }
    return 0;
}
