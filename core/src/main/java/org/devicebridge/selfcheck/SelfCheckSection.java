package org.devicebridge.selfcheck;

/**
 * One section of the self-check main job ({@link SelfCheck}): each feature area (Arrow CPU, DLPack, CUDA
 * device arrays, Python interop) contributes one, listed in SelfCheck. Package-private: no public class
 * implements it.
 */
interface SelfCheckSection {

    /** Receives the section's report lines. */
    interface Report {
        /** One "key: value" line. */
        void line(String key, String value);

        /** A check that passed or failed; a failure makes the self-check exit non-zero. */
        void check(String name, boolean passed, String detail);
    }

    /** The section's title, e.g. "Arrow C Data (CPU)". */
    String name();

    /** Runs the section's checks; an exception counts as one failure of the section. */
    void run(Report report) throws Exception;
}
