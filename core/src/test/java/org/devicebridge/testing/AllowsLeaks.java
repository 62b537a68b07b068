package org.devicebridge.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A test class that abandons handles on purpose (to test the Cleaner net), or a test method that leaves an
 * allocation behind that nothing can free; {@link NoLeaksExtension} skips it.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
public @interface AllowsLeaks {
    /** Why leaking is the point of the class. */
    String value();
}
