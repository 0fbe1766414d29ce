/* The part of the Java Native Interface the bridge uses, declared from the JNI specification's function table
   (each function's index in the JNIEnv table is fixed by the specification), so the bridge builds without a JDK or
   the NDK. tests/targets/mobile/android checks these slots against a JDK's jni.h. */
#ifndef EP_JNI_H
#define EP_JNI_H

#include <stdint.h>

typedef int32_t jint;
typedef int64_t jlong;
typedef uint8_t jboolean;
typedef void *jobject;
typedef jobject jclass;

typedef const struct ep_jni_functions *JNIEnv;

struct ep_jni_functions {
    void *before_find_class[6];
    jclass (*FindClass)(JNIEnv *env, const char *name);                          /* index 6 */
    void *before_throw_new[7];
    jint (*ThrowNew)(JNIEnv *env, jclass cls, const char *message);              /* index 14 */
    void *before_direct_buffers[215];
    void *(*GetDirectBufferAddress)(JNIEnv *env, jobject buffer);               /* index 230 */
    jlong (*GetDirectBufferCapacity)(JNIEnv *env, jobject buffer);              /* index 231 */
};

#define JNIEXPORT __attribute__((visibility("default")))
#define JNICALL
#define JNI_VERSION_1_6 0x00010006

#endif
