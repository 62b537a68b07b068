package org.devicebridge.python;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.NativeCalls;

/**
 * The Python side of the array interfaces ({@link ArrayInterfaces}): {@code _ai_read}, which reads an
 * interface dictionary into a tuple of checked-shape values for {@link InterfaceDictionary}, and
 * {@code _ai_dict}, which builds the dictionary an exporter object's attribute returns. Defined once in the
 * runtime's private namespace. Stateless; every method needs the GIL.
 */
final class InterfaceScript {
    private static final String CODE = """
            import operator as _ai_op
            class _AIError(Exception):
                pass
            def _ai_int(v, path):
                if isinstance(v, bool) or v is None:
                    raise _AIError('FORMAT', path, 'expected an int but found %r' % (v,))
                try:
                    return _ai_op.index(v)
                except TypeError:
                    raise _AIError('FORMAT', path, 'expected an int but found a ' + type(v).__name__) from None
            def _ai_ints(v, path):
                if not isinstance(v, (tuple, list)):
                    raise _AIError('FORMAT', path, 'expected a tuple of ints but found a ' + type(v).__name__)
                return tuple(_ai_int(x, '%s[%d]' % (path, i)) for i, x in enumerate(v))
            def _ai_read(obj, name):
                try:
                    try:
                        d = getattr(obj, name)
                    except AttributeError:
                        raise _AIError('SCHEMA', name, 'expected an object exposing %s but found a %s'
                                       % (name, type(obj).__name__)) from None
                    if not isinstance(d, dict):
                        raise _AIError('FORMAT', name, 'expected a dict but found a ' + type(d).__name__)
                    p = name + '.'
                    for k in ('version', 'shape', 'typestr') + (('data',) if name == '__cuda_array_interface__' else ()):
                        if k not in d:
                            raise _AIError('STRUCTURE', p + k, 'expected the required key %r but found none' % k)
                    version = _ai_int(d['version'], p + 'version')
                    shape = _ai_ints(d['shape'], p + 'shape')
                    typestr = d['typestr']
                    if not isinstance(typestr, str):
                        raise _AIError('FORMAT', p + 'typestr', 'expected a str but found a ' + type(typestr).__name__)
                    descr = d.get('descr')
                    if descr is not None:
                        ok = (isinstance(descr, (list, tuple)) and len(descr) == 1 and isinstance(descr[0], (list, tuple))
                              and len(descr[0]) == 2 and descr[0][0] == '' and descr[0][1] == typestr)
                        descr = None if ok else repr(descr)[:160]
                    data = d.get('data')
                    buffer = None
                    if isinstance(data, (tuple, list)):
                        if len(data) != 2:
                            raise _AIError('STRUCTURE', p + 'data', 'expected a (pointer, read_only) pair but found %d items'
                                           % len(data))
                        ptr = _ai_int(data[0], p + 'data[0]')
                        if not isinstance(data[1], (bool, int)):
                            raise _AIError('FORMAT', p + 'data[1]', 'expected a bool but found a ' + type(data[1]).__name__)
                        ro = bool(data[1])
                    else:
                        ptr, ro, buffer = 0, False, ('None' if data is None else type(data).__name__)
                    strides = d.get('strides')
                    if strides is not None:
                        strides = _ai_ints(strides, p + 'strides')
                    offset = _ai_int(d.get('offset', 0), p + 'offset')
                    mask = d.get('mask')
                    stream = d.get('stream')
                    if stream is not None:
                        stream = _ai_int(stream, p + 'stream')
                except _AIError as e:
                    return ('ERR',) + e.args
                return ('OK', version, shape, typestr, descr, buffer, ptr, ro, strides, offset, mask, stream)
            def _ai_dict(version, shape, typestr, ptr, read_only, strides, mask, *stream):
                d = {'version': version, 'shape': shape, 'typestr': typestr, 'descr': [('', typestr)],
                     'data': (ptr, read_only), 'strides': strides}
                if mask is not None:
                    d['mask'] = mask
                if stream:
                    d['stream'] = stream[0]
                return d
            """;

    private InterfaceScript() {}

    /** A borrowed reference to a helper defined by {@link #CODE} (GIL held). */
    static MemorySegment helper(String name) {
        MemorySegment ns = PythonRuntime.get().internalNamespace();
        try (Arena arena = Arena.ofConfined()) {
            return Py.check((MemorySegment) PyC.PyDict_GetItemString.invokeExact(ns, arena.allocateFrom(name)), name);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(name, t);
        }
    }

    /** Defines the helpers in the runtime's private namespace (GIL held; called once while it initialises). */
    static void install(MemorySegment namespace) {
        Py.decRef(Py.run(CODE, PyC.Py_file_input, namespace));
    }
}
