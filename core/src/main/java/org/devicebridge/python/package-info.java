/**
 * CPython interop, optional: a JVM that embeds CPython (libpython3 loaded lazily through FFM) hands Arrow
 * and DLPack data to Python objects and takes theirs, zero-copy, through the protocols that NumPy, pyarrow,
 * PyTorch, CuPy and Numba speak (DLPack and Arrow PyCapsules, the DLPack C exchange table, the array
 * interfaces).
 *
 * <p>One entry each way: {@link org.devicebridge.python.PythonExport#builder()} builds a Python object with
 * {@code __dlpack__} / {@code __arrow_c_array__} / {@code __array_interface__} / ... backed by Java
 * exporters (to give), and {@link org.devicebridge.python.PythonImport} takes a producer's tensor, Arrow
 * schema, array or stream through whichever protocol it speaks (to take).
 * {@link org.devicebridge.python.PythonRuntime} loads and initialises the interpreter;
 * {@link org.devicebridge.python.PyObjectRef} owns one Python reference. Nothing here loads unless called:
 * without libpython every entry point throws {@link org.devicebridge.python.PythonUnavailableException}.
 *
 * <p><b>Start here:</b> {@link org.devicebridge.python.PythonRuntime#get()}, then
 * {@link org.devicebridge.python.PythonExport#builder()} to hand Java data to NumPy, PyTorch or pyarrow, or
 * {@link org.devicebridge.python.PythonImport#tensor} to take theirs.
 */
package org.devicebridge.python;
