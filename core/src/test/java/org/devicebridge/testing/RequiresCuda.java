package org.devicebridge.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.devicebridge.cuda.Cuda;

/**
 * Marks a test (class or method) that needs a CUDA device: it carries the JUnit tag {@code gpu} and is
 * skipped, with the driver's reason, where no CUDA driver is available. On the GPU machine set
 * {@code DEVICEBRIDGE_REQUIRE_GPU=1} so that a missing driver fails these tests instead of skipping them.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag("gpu")
@ExtendWith(RequiresCuda.Condition.class)
public @interface RequiresCuda {

    final class Condition implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            if (Cuda.isAvailable() || "1".equals(System.getenv("DEVICEBRIDGE_REQUIRE_GPU"))) {
                return ConditionEvaluationResult.enabled("CUDA: " + Cuda.unavailableReason());
            }
            return ConditionEvaluationResult.disabled("CUDA driver not available: " + Cuda.unavailableReason());
        }
    }
}
