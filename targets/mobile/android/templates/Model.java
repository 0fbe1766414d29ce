package @PACKAGE@;

import androidx.annotation.NonNull;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
@IMPORTS@
import java.nio.channels.FileChannel;

/**
 * @DESCRIPTION@
 *
 * <p>Load the plan once ({@code @CLASS@.load(context.getAssets().open(@CLASS@.ASSET))}), then call {@link #run} as
 * often as needed. Each input and output also has a direct buffer in the runtime's memory ({@code input...()},
 * {@code output...()}): write the inputs there, call {@link #run()}, read the outputs, and nothing is copied. An
 * instance is not for concurrent use: its methods are synchronized.
 */
public final class @CLASS@ implements AutoCloseable {
    /** The plan's file name in the module's assets. */
    @NonNull public static final String ASSET = "@ASSET@";

    static {
        System.loadLibrary("@LIBRARY@");
    }

@CONSTANTS@

    /** The plan and the session's memory, held for as long as the session reads them. */
    private final ByteBuffer plan;
    private final ByteBuffer memory;
    private long session;
@FIELDS@

    private @CLASS@(ByteBuffer plan, long planOffset, long planLength) throws EdgepackException {
        long required = nativeRequiredBytes(plan, planOffset, planLength);
        if (required > Integer.MAX_VALUE - 64) {
            throw new EdgepackException("the plan needs " + required + " bytes of memory, more than a ByteBuffer holds");
        }
        ByteBuffer raw = ByteBuffer.allocateDirect((int) required + 64);
        int memoryOffset = nativeAlignment(raw);
        this.plan = plan;
        this.memory = raw;
        this.session = nativeOpen(plan, planOffset, planLength, raw, memoryOffset, required);
@BINDINGS@
    }

    /** Loads a plan from a stream (an asset, a resource); the stream is read to its end, not closed. */
    @NonNull
    public static @CLASS@ load(@NonNull InputStream stream) throws IOException, EdgepackException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        byte[] chunk = new byte[1 << 16];
        for (int n; (n = stream.read(chunk)) > 0; ) {
            bytes.write(chunk, 0, n);
        }
        return load(ByteBuffer.wrap(bytes.toByteArray()));
    }

    /** Loads a plan file, mapped into memory rather than read (its weights are used in place). */
    @NonNull
    public static @CLASS@ load(@NonNull File file) throws IOException, EdgepackException {
        try (FileInputStream stream = new FileInputStream(file); FileChannel channel = stream.getChannel()) {
            ByteBuffer mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size());
            return new @CLASS@(mapped, 0, mapped.capacity());
        }
    }

    /** Loads a plan from the buffer's remaining bytes (copied into an aligned direct buffer). */
    @NonNull
    public static @CLASS@ load(@NonNull ByteBuffer bytes) throws EdgepackException {
        ByteBuffer source = bytes.duplicate();
        int length = source.remaining();
        ByteBuffer aligned = ByteBuffer.allocateDirect(length + 64);
        int offset = nativeAlignment(aligned);
        aligned.position(offset);
        aligned.put(source);
        return new @CLASS@(aligned, offset, length);
    }

    /** Runs the model on what the input buffers hold; the outputs are then in the output buffers. */
    public synchronized void run() throws EdgepackException {
        nativeRun(open());
    }

@RUN@

    /** Forgets the session: its memory is freed with this object, and later calls throw IllegalStateException. */
    @Override
    public synchronized void close() {
        session = 0;
    }

    private long open() {
        if (session == 0) {
            throw new IllegalStateException("@CLASS@ is closed");
        }
        return session;
    }

    private static ByteBuffer view(ByteBuffer memory, long offset, long bytes) {
        ByteBuffer view = memory.duplicate();
        view.limit((int) (offset + bytes));
        view.position((int) offset);
        return view.slice().order(ByteOrder.nativeOrder());
    }

@ACCESSORS@

    private static native int nativeAlignment(ByteBuffer buffer);

    private static native long nativeRequiredBytes(ByteBuffer plan, long offset, long length) throws EdgepackException;

    private static native long nativeOpen(ByteBuffer plan, long planOffset, long planLength, ByteBuffer memory,
                                          long memoryOffset, long memoryLength) throws EdgepackException;

    private static native long nativeDataOffset(ByteBuffer memory, long session, boolean output, int index, long bytes)
            throws EdgepackException;

    private static native void nativeRun(long session) throws EdgepackException;
}
