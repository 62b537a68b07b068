/**
 * The self-check main job ({@link org.devicebridge.selfcheck.SelfCheck}) and its sections, one per feature
 * area. Not exported: run it by name, {@code -m org.devicebridge.core/org.devicebridge.selfcheck.SelfCheck} on
 * the module path.
 */
package org.devicebridge.selfcheck;
