package org.devicebridge.selfcheck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DLPackSelfCheckTest {
    @Test
    void everyDLPackSelfCheckPasses() throws Exception {
        List<String> failed = new ArrayList<>();
        List<String> passed = new ArrayList<>();
        new DLPackSelfCheck().run(new SelfCheckSection.Report() {
            @Override
            public void line(String key, String value) {}

            @Override
            public void check(String name, boolean ok, String detail) {
                (ok ? passed : failed).add(name + " " + detail);
            }
        });
        assertTrue(failed.isEmpty(), failed.toString());
        assertEquals(2, passed.size());
    }
}
