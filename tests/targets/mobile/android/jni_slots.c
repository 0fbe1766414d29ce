/* Prints the JNIEnv slot of each function the bridge's ep_jni.h declares, as the JDK's jni.h places them (compiled
   against the JDK's headers) or as ep_jni.h does (compiled with -DEP_JNI). */
#include <stddef.h>
#include <stdio.h>
#ifdef EP_JNI
#include "ep_jni.h"
#define TABLE struct ep_jni_functions
#else
#include <jni.h>
#define TABLE struct JNINativeInterface_
#endif

int main(void) {
    printf("FindClass %zu\n", offsetof(TABLE, FindClass) / sizeof(void *));
    printf("ThrowNew %zu\n", offsetof(TABLE, ThrowNew) / sizeof(void *));
    printf("GetDirectBufferAddress %zu\n", offsetof(TABLE, GetDirectBufferAddress) / sizeof(void *));
    printf("GetDirectBufferCapacity %zu\n", offsetof(TABLE, GetDirectBufferCapacity) / sizeof(void *));
    return 0;
}
