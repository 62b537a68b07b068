package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.devicebridge.internal.ArrowExportSelfCheck;
import org.devicebridge.internal.SelfCheckSection;
import org.junit.jupiter.api.Test;

class ArrowExportSelfCheckTest {
    @Test
    void selfCheckSectionPassesEveryCheckAndLeavesNothingLive() throws Exception {
        ExportTestSupport.Baseline baseline = new ExportTestSupport.Baseline();
        List<String> failed = new ArrayList<>();
        List<String> passed = new ArrayList<>();
        new ArrowExportSelfCheck().run(new SelfCheckSection.Report() {
            @Override
            public void line(String key, String value) {
                failed.add("unexpected line " + key + ": " + value);
            }

            @Override
            public void check(String name, boolean ok, String detail) {
                (ok ? passed : failed).add(name + ": " + detail);
            }
        });
        assertEquals(List.of(), failed);
        assertEquals(3, passed.size());
        try (var allocator = ExportTestSupport.allocator()) {
            baseline.assertNothingLeaked(allocator);
        }
        assertTrue(new ArrowExportSelfCheck().name().contains("export"));
    }
}
