// The globals a torch.save of plain data names: tensor rebuilding, containers, numpy scalars and arrays.
// A reader that knows what its files hold refuses any other global (os.system, builtins.eval, …) at
// its first mention: the file is not one it should read, even though decoding it would run nothing.

const CHECKPOINT_GLOBALS: readonly RegExp[] = [
  /^torch\._utils\._rebuild_(tensor|tensor_v2|tensor_v3|parameter|parameter_with_state)$/,
  /^torch\._tensor\._rebuild_from_type_v2$/,
  /^torch\.(\w+Storage|Size|(float|int|uint|bfloat|bool|half|double|long|short)\w*)$/,
  /^torch\.storage\._load_from_bytes$/,
  /^collections\.(OrderedDict|defaultdict)$/,
  /^(builtins|__builtin__)\.(set|frozenset|bytes|bytearray|complex|slice|range)$/,
  /^_codecs\.encode$/,
  /^(copyreg|copy_reg)\._reconstructor$/,
  /^numpy\.(dtype|ndarray)$/,
  /^numpy\.(_core|core)\.(multiarray\.(scalar|_reconstruct)|numeric\._frombuffer)$/,
  /^numpy\.core\._multiarray_umath\.(scalar|_reconstruct)$/,
  /^enum\.Enum$/,
];

/** Whether `name` (`module.qualname`) is a checkpoint global or one of the format's own (`own`: its package's classes). */
export function checkpointGlobal(name: string, own: readonly RegExp[] = []): boolean {
  return CHECKPOINT_GLOBALS.some((re) => re.test(name)) || own.some((re) => re.test(name));
}
