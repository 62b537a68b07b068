package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.devicebridge.arrow.ArrowDataType.Layout;
import org.junit.jupiter.api.Test;

/** The offset width has one home. */
class OffsetWidthTest {

    @Test
    void offsetWidthIsFourForTheSmallLayoutsEightForTheLargeAndZeroWithoutOffsets() {
        assertEquals(4, Layout.VARIABLE.offsetWidth());
        assertEquals(4, Layout.LIST.offsetWidth());
        assertEquals(4, Layout.LIST_VIEW.offsetWidth());
        assertEquals(8, Layout.LARGE_VARIABLE.offsetWidth());
        assertEquals(8, Layout.LARGE_LIST.offsetWidth());
        assertEquals(8, Layout.LARGE_LIST_VIEW.offsetWidth());
        for (Layout l : new Layout[] {Layout.NULL, Layout.BOOL, Layout.FIXED_WIDTH, Layout.VIEW,
                Layout.FIXED_SIZE_BINARY, Layout.FIXED_SIZE_LIST, Layout.STRUCT, Layout.SPARSE_UNION,
                Layout.DENSE_UNION, Layout.RUN_END_ENCODED}) {
            assertEquals(0, l.offsetWidth(), l.name());
        }
    }
}
