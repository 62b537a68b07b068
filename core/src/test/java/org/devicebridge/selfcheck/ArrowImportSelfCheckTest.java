package org.devicebridge.selfcheck;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ArrowImportSelfCheckTest {
    @Test
    void everySelfCheckOfTheImportSectionPasses() {
        List<String> results = new ArrayList<>();
        new ArrowImportSelfCheck().run(new SelfCheckSection.Report() {
            @Override
            public void line(String key, String value) {
            }

            @Override
            public void check(String name, boolean passed, String detail) {
                results.add(name + "=" + passed + " (" + detail + ")");
            }
        });
        assertEquals(4, results.size(), results.toString());
        results.forEach(r -> assertEquals(true, r.contains("=true"), r));
    }
}
