package @PACKAGE@;

/** A plan that does not load, or a run that fails; the message is the edgepack core's. */
public final class EdgepackException extends Exception {
    private static final long serialVersionUID = 1L;

    public EdgepackException(String message) {
        super(message);
    }
}
