// @MODULE@: @DESCRIPTION@
// Built by edgepack @VERSION@ (profile @PROFILE@). The native libraries under src/main/jniLibs are prebuilt: no NDK
// is needed to use this module.
plugins {
    id("com.android.library")
}

android {
    namespace = "@PACKAGE@"
    compileSdk = 35

    defaultConfig {
        minSdk = @MIN_SDK@
        consumerProguardFiles("consumer-rules.pro")
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_1_8
        targetCompatibility = JavaVersion.VERSION_1_8
    }

    packaging {
        jniLibs {
            // The plan is read in place from the APK's libraries and assets; keep them uncompressed and aligned.
            useLegacyPackaging = false
        }
    }

    androidResources {
        noCompress += "epk"
    }
}

dependencies {
    compileOnly("androidx.annotation:annotation:1.9.1")
}
