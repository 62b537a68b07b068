package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/** The UTF-8 check of string values, for {@link ContentChecks}: a strict decoder, reused per array. */
final class Utf8 {
    private Utf8() {}


    /** A decoder that reports malformed and unmappable input. */
    static CharsetDecoder decoder() {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
    }

    /** Decodes {@code bytes} (value {@code value} at {@code path}), refusing invalid UTF-8. */
    static void check(CharsetDecoder decoder, MemorySegment bytes, String path, long value) {
        try {
            decoder.reset().decode(bytes.asByteBuffer());
        } catch (CharacterCodingException e) {
            throw new ValidationException(Category.CONTENT, path, "value " + value
                    + ": expected valid UTF-8 but found an invalid byte sequence");
        }
    }
}
