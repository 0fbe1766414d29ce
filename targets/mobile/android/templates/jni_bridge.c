/* The JNI bridge of @CLASS@ over the edgepack C core. The Java class owns all memory (the plan and the session's
   arena are direct ByteBuffers), so nothing here allocates; every call checks its buffers before use and reports a
   failure as the Java exception @EXCEPTION@ with the core's message. */
#include "edgepack.h"
#include "ep_jni.h"

static void fail(JNIEnv *env, const char *message) {
    jclass exception = (*env)->FindClass(env, "@EXCEPTION@");
    if (exception) (*env)->ThrowNew(env, exception, message);
}

/* The buffer's bytes from `offset` on, or NULL (with an exception pending) when it is not direct or too short. */
static uint8_t *buffer_at(JNIEnv *env, jobject buffer, jlong offset, jlong length, const char *what) {
    uint8_t *address = buffer ? (*env)->GetDirectBufferAddress(env, buffer) : 0;
    jlong capacity = buffer ? (*env)->GetDirectBufferCapacity(env, buffer) : -1;
    if (!address || capacity < 0 || offset < 0 || length < 0 || offset > capacity || length > capacity - offset) {
        fail(env, what);
        return 0;
    }
    return address + offset;
}

JNIEXPORT jint JNICALL @JNI@_nativeAlignment(JNIEnv *env, jclass cls, jobject buffer) {
    (void)cls;
    uint8_t *address = buffer_at(env, buffer, 0, 0, "the buffer is not a direct ByteBuffer");
    return address ? (jint)((EP_MEMORY_ALIGN - (uintptr_t)address % EP_MEMORY_ALIGN) % EP_MEMORY_ALIGN) : 0;
}

JNIEXPORT jlong JNICALL @JNI@_nativeRequiredBytes(JNIEnv *env, jclass cls, jobject plan, jlong offset, jlong length) {
    (void)cls;
    size_t bytes = 0;
    const uint8_t *start = buffer_at(env, plan, offset, length, "the plan buffer is shorter than the plan");
    if (!start) return 0;
    ep_status status = ep_required_bytes(start, (size_t)length, &bytes);
    if (status != EP_OK) {
        fail(env, "the plan is not a valid edgepack plan (its header does not check)");
        return 0;
    }
    return (jlong)bytes;
}

JNIEXPORT jlong JNICALL @JNI@_nativeOpen(JNIEnv *env, jclass cls, jobject plan, jlong plan_offset, jlong plan_length,
                                        jobject memory, jlong memory_offset, jlong memory_length) {
    (void)cls;
    const uint8_t *start = buffer_at(env, plan, plan_offset, plan_length, "the plan buffer is shorter than the plan");
    uint8_t *arena = buffer_at(env, memory, memory_offset, memory_length, "the session buffer is too small");
    if (!start || !arena) return 0;
    ep_session *session = 0;
    if (ep_open(start, (size_t)plan_length, arena, (size_t)memory_length, &session) != EP_OK) {
        fail(env, ep_open_error(arena, (size_t)memory_length));
        return 0;
    }
    return (jlong)(uintptr_t)session;
}

JNIEXPORT jlong JNICALL @JNI@_nativeDataOffset(JNIEnv *env, jclass cls, jobject memory, jlong session,
                                              jboolean output, jint index, jlong bytes) {
    (void)cls;
    ep_tensor_info info;
    const ep_session *opened = (const ep_session *)(uintptr_t)session;
    uint8_t *base = buffer_at(env, memory, 0, 0, "the session buffer is not a direct ByteBuffer");
    if (!base) return -1;
    ep_status status = index < 0 ? EP_ERR_ARGUMENT
                       : output  ? ep_output(opened, (size_t)index, &info)
                                 : ep_input(opened, (size_t)index, &info);
    if (status != EP_OK || (jlong)info.bytes != bytes) {
        fail(env, "the plan's inputs and outputs differ from the ones this class was generated for: load the plan "
                  "built with it");
        return -1;
    }
    return (jlong)((uint8_t *)info.data - base);
}

JNIEXPORT void JNICALL @JNI@_nativeRun(JNIEnv *env, jclass cls, jlong session) {
    (void)cls;
    ep_session *opened = (ep_session *)(uintptr_t)session;
    if (ep_run(opened) != EP_OK) fail(env, ep_error(opened));
}
