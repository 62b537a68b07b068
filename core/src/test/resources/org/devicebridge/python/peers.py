# pyarrow's side of PyArrowPeerTest: the batches of every case, the canonical text of their values (the
# same text ViewValues makes from a Java view), a description of names, nullability and metadata, and the
# checks pyarrow makes on what it imported from Java. Runs in the test's namespace; pyarrow only.
import decimal
import gc
import struct

import pyarrow as pa

D = decimal.Decimal


def _views(t):
    return [pa.array(['short', None, 'a string longer than twelve bytes', 'x'], t),
            pa.array(['another string well past twelve', None, '', 'tail string past the inline size'], t)]


def _cases():
    c = {}
    c['bool'] = lambda: pa.array([True, None, False, True, False, None, True])
    c['int8'] = lambda: pa.array([1, -128, None, 127, 0, -1, 5], pa.int8())
    c['uint16'] = lambda: pa.array([1, 65535, None, 0, 7, 8, 9], pa.uint16())
    c['int32'] = lambda: pa.array([1, None, -2147483648, 2147483647, 0, 3, None], pa.int32())
    c['int64'] = lambda: pa.array([1, None, -2 ** 63, 2 ** 63 - 1, 0, 3, 4], pa.int64())
    c['uint64'] = lambda: pa.array([1, None, 2 ** 64 - 1, 0, 2 ** 63, 3, 4], pa.uint64())
    c['float32'] = lambda: pa.array([1.5, None, -0.25, 3.0e38, 0.0, -0.0, 7.0], pa.float32())
    c['float64'] = lambda: pa.array([1.5, None, -0.25, 1e308, 5e-324, -0.0, 7.0], pa.float64())
    c['date32'] = lambda: pa.array([0, None, 19000, -1, 5, 6, 7], pa.date32())
    c['timestamp_us_utc'] = lambda: pa.array([0, None, 1700000000000000, -1, 5, 6, 7], pa.timestamp('us', tz='UTC'))
    c['time64_ns'] = lambda: pa.array([0, None, 86399999999999, 1, 5, 6, 7], pa.time64('ns'))
    c['duration_ms'] = lambda: pa.array([0, None, -5, 2 ** 62, 5, 6, 7], pa.duration('ms'))
    c['string'] = lambda: pa.array(['a', None, '', 'h\u00e9llo', 'wxyz', None, 'z'])
    c['large_string'] = lambda: pa.array(['a', None, '', 'h\u00e9llo', 'wxyz', None, 'z'], pa.large_string())
    c['binary'] = lambda: pa.array([b'a', None, b'', b'\x00\xff', b'wxyz', None, b'z'])
    c['large_binary'] = lambda: pa.array([b'a', None, b'', b'\x00\xff', b'wxyz', None, b'z'], pa.large_binary())
    c['fixed_size_binary'] = lambda: pa.array([b'abc', None, b'\x00\x01\x02', b'xyz', b'123', b'456', None], pa.binary(3))
    c['null'] = lambda: pa.nulls(6)
    if hasattr(pa, 'decimal32'):
        c['decimal32'] = lambda: pa.array([D('1.25'), None, D('-99999.99'), D('0.01'), D('0'), D('12.5'), D('-1')],
                                          pa.decimal32(7, 2))
        c['decimal64'] = lambda: pa.array([D('1.250'), None, D('-999999999999.999'), D('0.001'), D('0'), D('5'), D('-1')],
                                          pa.decimal64(15, 3))
    c['decimal128'] = lambda: pa.array([D('1.25'), None, D('-' + '9' * 28 + '.' + '9' * 10), D('0'), D('3'), D('4'), D('5')],
                                       pa.decimal128(38, 10))
    c['decimal256'] = lambda: pa.array([D('1.25'), None, D('-' + '9' * 56 + '.' + '9' * 20), D('0'), D('3'), D('4'), D('5')],
                                       pa.decimal256(76, 20))
    c['list'] = lambda: pa.array([[1, 2], None, [], [None, 4], [5], [6, 7, 8], [9]], pa.list_(pa.int32()))
    c['large_list'] = lambda: pa.array([[1, 2], None, [], [None, 4], [5], [6, 7, 8], [9]], pa.large_list(pa.int32()))
    c['fixed_size_list'] = lambda: pa.array([[1, 2], None, [3, None], [5, 6], [7, 8], [9, 10], [11, 12]], pa.list_(pa.int16(), 2))
    c['struct'] = lambda: pa.array([{'a': 1, 'b': 'x'}, None, {'a': None, 'b': 'y'}, {'a': 4, 'b': None}, {'a': 5, 'b': 'z'},
                                    {'a': 6, 'b': ''}, {'a': 7, 'b': 'w'}],
                                   pa.struct([pa.field('a', pa.int32()), pa.field('b', pa.string())]))
    c['map_noncanonical_names'] = lambda: pa.array(
        [[('a', 1), ('b', None)], None, [], [('c', 3)], [('d', 4), ('e', 5)], [('f', 6)], []],
        pa.map_(pa.field('some_key', pa.string(), nullable=False), pa.field('some_value', pa.int32())))
    if hasattr(pa, 'string_view'):
        c['string_view'] = lambda: pa.concat_arrays(_views(pa.string_view()))
        c['binary_view'] = lambda: pa.concat_arrays(_views(pa.string_view())).cast(pa.binary_view())
    if hasattr(pa, 'RunEndEncodedArray'):
        c['run_end_encoded'] = lambda: pa.RunEndEncodedArray.from_arrays(
            pa.array([2, 3, 6, 7, 9], pa.int32()), pa.array([1, None, 7, 8, 9], pa.int64()))
        c['run_end_encoded_int16_strings'] = lambda: pa.RunEndEncodedArray.from_arrays(
            pa.array([1, 4, 5, 8], pa.int16()), pa.array(['a', 'bb', None, 'dddd']))
    if hasattr(pa, 'ListViewArray'):
        c['list_view'] = lambda: pa.ListViewArray.from_arrays(
            pa.array([2, 0, 1, 0, 3, 4, 0], pa.int32()), pa.array([2, 3, 0, 1, 2, 1, 5], pa.int32()),
            pa.array([1, 2, None, 4, 5, 6]), mask=pa.array([False, False, False, True, False, False, False]))
        c['large_list_view'] = lambda: pa.LargeListViewArray.from_arrays(
            pa.array([2, 0, 1, 0, 3, 4, 0], pa.int64()), pa.array([2, 3, 0, 1, 2, 1, 5], pa.int64()),
            pa.array(['a', 'b', None, 'd', 'e', 'f']))
    c['dictionary'] = lambda: pa.DictionaryArray.from_arrays(
        pa.array([1, 0, None, 2, 2, 0, 1], pa.int8()), pa.array(['x', None, 'zz']))
    c['list_of_dictionary'] = lambda: pa.ListArray.from_arrays(
        pa.array([0, 2, 2, 4, 5, 6, 6, 7], pa.int32()),
        pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 1, 0, 1, 0], pa.int16()), pa.array(['p', 'q'])))
    c['nested_dictionary'] = lambda: pa.DictionaryArray.from_arrays(
        pa.array([1, 0, None, 1, 2, 0, 2], pa.int8()),
        pa.ListArray.from_arrays(pa.array([0, 1, 3, 3], pa.int32()),
                                 pa.DictionaryArray.from_arrays(pa.array([0, 1, None], pa.int32()), pa.array(['m', 'n']))))
    c['dense_union_type_ids'] = lambda: pa.UnionArray.from_dense(
        pa.array([5, 10, 5, 10, 10, 5, 5], pa.int8()), pa.array([0, 0, 1, 1, 2, 2, 3], pa.int32()),
        [pa.array([1, None, 3, 4]), pa.array(['x', 'y', None])], ['i', 's'], [5, 10])
    c['sparse_union_type_ids'] = lambda: pa.UnionArray.from_sparse(
        pa.array([3, 7, 7, 3, 3, 7, 3], pa.int8()),
        [pa.array([1, 2, 3, None, 5, 6, 7]), pa.array(['a', None, 'c', 'd', 'e', 'f', 'g'])], ['i', 's'], [3, 7])
    c['metadata'] = lambda: pa.array([{'a': 1}, None, {'a': 3}, {'a': 4}, {'a': None}, {'a': 6}, {'a': 7}],
                                     pa.struct([pa.field('a', pa.int32(), metadata={'inner': 'field'})]))
    return c


CASES = _cases()
SCHEMA_METADATA = {'schema_key': 'schema value', 'encoding': 'utf-8 \u00e9'}
FIELD_METADATA = {'field_key': 'field value'}


def peer_batch(name, variant):
    """The batch of a case (one column 'v'), or None where this pyarrow cannot build it."""
    make = CASES.get(name)
    if make is None:
        return None
    a = make()
    meta = name == 'metadata'
    field = pa.field('v', a.type, nullable=True, metadata=FIELD_METADATA if meta else None)
    b = pa.RecordBatch.from_arrays([a], schema=pa.schema([field], metadata=SCHEMA_METADATA if meta else None))
    if variant == 'sliced':
        return b.slice(1, len(b) - 2)
    if variant == 'empty':
        return b.slice(len(b), 0)
    return b


def canon_at(arr, i):
    """The canonical text of row i of arr. Unions, structs and dictionaries are read through arrays:
    pyarrow's UnionScalar reports a wrong type_code for a null child value."""
    t = arr.type
    if pa.types.is_union(t):
        # From the buffers: UnionArray.type_codes and .offsets ignore the array's offset (pyarrow 25).
        buffers = arr.buffers()
        code = struct.unpack_from('<b', buffers[1], arr.offset + i)[0]
        child = arr.field(t.type_codes.index(code))  # a sparse child comes offset-adjusted
        row = i if t.mode == 'sparse' else struct.unpack_from('<i', buffers[2], 4 * (arr.offset + i))[0]
        return 'u%d:%s' % (code, canon_at(child, row))
    if pa.types.is_struct(t):
        if not arr[i].is_valid:
            return 'null'
        return '{' + ','.join(canon_at(c, i) for c in arr.flatten()) + '}'
    if pa.types.is_dictionary(t):
        index = arr.indices[i]
        return canon_at(arr.dictionary, index.as_py()) if index.is_valid else 'null'
    return canon(arr[i])


def canon(s):
    t = s.type
    if pa.types.is_run_end_encoded(t):
        v = s.value
        return 'null' if v is None else canon(v)
    if not s.is_valid or pa.types.is_null(t):
        return 'null'
    if pa.types.is_boolean(t):
        return 'true' if s.as_py() else 'false'
    if pa.types.is_integer(t):
        return str(s.as_py())
    if pa.types.is_floating(t):
        return 'f:%d' % struct.unpack('<q', struct.pack('<d', s.as_py()))[0]
    if pa.types.is_decimal(t):
        sign, digits, exp = s.as_py().as_tuple()
        n = int(''.join(map(str, digits)) or '0')
        k = exp + t.scale
        n = n * 10 ** k if k >= 0 else n // 10 ** (-k)
        return 'd:%d' % (-n if sign else n)
    if pa.types.is_temporal(t):
        return str(s.cast(pa.int32() if t.bit_width == 32 else pa.int64()).as_py())
    if isinstance(s.as_py(), (str, bytes)):
        v = s.as_py()
        return 'x:' + (v.encode() if isinstance(v, str) else v).hex()
    if hasattr(s, 'values'):  # lists, list views, fixed-size lists, maps (entries are structs)
        values = s.values
        return '[' + ','.join(canon_at(values, j) for j in range(len(values))) + ']'
    raise TypeError('no canonical text for %s' % t)


def peer_canon(batch):
    """One line per column, the rows' canonical texts separated by tabs."""
    return '\n'.join('\t'.join(canon_at(col, i) for i in range(len(col))) for col in batch.columns)


def _meta(m):
    if not m:
        return ''
    items = sorted((k.decode(), v.decode()) for k, v in m.items())
    return '<' + ','.join('%s=%s' % kv for kv in items) + '>'


def _children(t):
    if pa.types.is_struct(t) or pa.types.is_union(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or (hasattr(pa.types, 'is_list_view') and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t)))):
        return [t.value_field]
    return []


def _field(f):
    kids = _children(f.type)
    return (f.name + ('' if f.nullable else '!') + _meta(f.metadata)
            + ('(' + ','.join(_field(k) for k in kids) + ')' if kids else ''))


def peer_describe(batch):
    """Names, nullability and metadata: the same text PyArrowPeerTest makes from a SchemaNode tree."""
    s = batch.schema
    return _meta(s.metadata) + '(' + ','.join(_field(f) for f in s) + ')'


def peer_import(obj):
    """A RecordBatch from an object speaking __arrow_c_array__."""
    if hasattr(pa.RecordBatch, '_import_from_c_capsule'):
        return pa.RecordBatch._import_from_c_capsule(*obj.__arrow_c_array__())
    return pa.record_batch(obj)


def _problems(got, src):
    try:
        got.validate(full=True)
    except Exception as e:
        return ['validate(full=True): %s: %s' % (type(e).__name__, e)]
    problems = []
    if peer_describe(got) != peer_describe(src):
        problems.append('names/metadata %s != %s' % (peer_describe(got), peer_describe(src)))
    if not got.schema.equals(src.schema, check_metadata=True):
        problems.append('schema %s != %s' % (got.schema, src.schema))
    if got.num_rows != src.num_rows:
        problems.append('rows %d != %d' % (got.num_rows, src.num_rows))
    elif peer_canon(got) != peer_canon(src):
        problems.append('values %s != %s' % (peer_canon(got), peer_canon(src)))
    return problems


def peer_check(got, src):
    """'' when pyarrow finds got (imported from Java) equal to src, else what differs. Problems that
    pyarrow's own C Data round trip of src shows too are pyarrow's, reported as a 'NOTE: ...'."""
    mine = _problems(got, src)
    if not mine:
        return ''
    own = _problems(peer_import(src), src)
    real = [p for p in mine if p not in own]
    if real:
        return '; '.join(real)
    return "NOTE: pyarrow's own C Data round trip of the source shows the same: " + '; '.join(mine)
