/**
 * devicebridge: zero-copy Arrow C Data/Device/Stream, DLPack and CUDA interop for the JVM.
 *
 * <p>Arrow Java is optional ({@code requires static}): users who need only DLPack or CUDA do not need it
 * on their module path. Native access must be granted to this module and to
 * {@code org.devicebridge.generated} ({@code --enable-native-access=org.devicebridge.core,org.devicebridge.generated}).
 */
module org.devicebridge.core {
    requires org.devicebridge.generated;
    requires static org.apache.arrow.vector;
    requires static org.apache.arrow.memory.core;

    exports org.devicebridge;
    exports org.devicebridge.arrow;
    exports org.devicebridge.dlpack;
    exports org.devicebridge.cuda;
}
