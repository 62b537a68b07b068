/**
 * devicebridge: zero-copy Arrow C Data/Device/Stream, DLPack and CUDA interop for the JVM.
 *
 * <p>Packages by what they depend on: {@code org.devicebridge.arrow} needs only the FFM API;
 * {@code org.devicebridge.arrow.java} is the Arrow Java bridge (DLPack to and from Arrow Java vectors too); {@code org.devicebridge.arrow.cuda} is Arrow
 * on CUDA (both need Arrow Java); {@code org.devicebridge.arrow.flight} is Arrow Flight for device batches
 * (it also needs Arrow Flight, optional as well: {@code requires static org.apache.arrow.flight.core}). The plumbing ({@code internal}, {@code foreign}) and the self-check main
 * ({@code selfcheck}, run with {@code -m org.devicebridge.core/org.devicebridge.selfcheck.SelfCheck}) are
 * not exported.
 *
 * <p>One device identity serves every package: {@code org.devicebridge.Device} (a {@code DeviceKind}, whose
 * numbers are both Arrow's {@code ARROW_DEVICE_*} and DLPack's {@code kDL*}, and an ordinal).
 *
 * <p>Arrow Java is optional ({@code requires static}): users who need only DLPack or CUDA do not need it
 * on their module path. Native access must be granted to this module and to
 * {@code org.devicebridge.generated} ({@code --enable-native-access=org.devicebridge.core,org.devicebridge.generated}).
 * To make the FFM allocation manager Arrow Java's default ({@code ArrowMemory.installAsDefault()}), Arrow's
 * package must be open to this module:
 * {@code --add-opens=org.apache.arrow.memory.core/org.apache.arrow.memory=org.devicebridge.core} (Arrow Java
 * keeps its default in a private field); nothing else is needed for Arrow Java's memory (no Netty).
 */
module org.devicebridge.core {
    requires org.devicebridge.generated;
    requires static org.apache.arrow.vector;
    requires static org.apache.arrow.memory.core;
    requires static org.apache.arrow.flight.core;

    exports org.devicebridge;
    exports org.devicebridge.arrow;
    exports org.devicebridge.arrow.java;
    exports org.devicebridge.arrow.cuda;
    exports org.devicebridge.arrow.flight;
    exports org.devicebridge.dlpack;
    exports org.devicebridge.cuda;
    exports org.devicebridge.python;
    exports org.devicebridge.ipc;
}
