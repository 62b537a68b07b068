/**
 * CPython interop, optional: a JVM that embeds CPython (libpython3 loaded lazily through FFM) hands Arrow
 * and DLPack data to Python objects and takes theirs, zero-copy, through the PyCapsule protocols that
 * NumPy, pyarrow, PyTorch and CuPy speak.
 *
 * <p>{@link org.devicebridge.python.PythonRuntime} loads and initialises the interpreter and holds the GIL;
 * {@link org.devicebridge.python.PyObjectRef} owns one Python reference;
 * {@link org.devicebridge.python.Capsules} makes and takes capsules around raw C structs;
 * {@link org.devicebridge.python.PythonExport} builds objects with {@code __dlpack__} /
 * {@code __arrow_c_array__} / ... from Java exporters; {@link org.devicebridge.python.PythonImport} asks
 * Python producers for their capsules. Nothing here loads unless called: without libpython every entry
 * point throws {@link org.devicebridge.python.PythonUnavailableException}.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.python.PythonRuntime#get()}, then
 * {@link org.devicebridge.python.PythonExport#builder()} to hand Java data to NumPy, PyTorch or pyarrow, or
 * {@link org.devicebridge.python.PythonImport} to take theirs.
 */
package org.devicebridge.python;
