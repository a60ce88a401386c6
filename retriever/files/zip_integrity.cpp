#include "retriever/files/zip_integrity.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace gradcache {
namespace retriever {
namespace {

// Signatures and fixed sizes of the records (PKWARE APPNOTE.TXT, section 4.3).
constexpr uint32_t kLocalSignature = 0x04034b50, kCentralSignature = 0x02014b50, kEndSignature = 0x06054b50,
                   kZip64EndSignature = 0x06064b50, kZip64LocatorSignature = 0x07064b50;
constexpr uint64_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kZip64LocatorSize = 20, kZip64EndSize = 56;
constexpr uint64_t kMaxCommentSize = 0xFFFF;
constexpr uint16_t kZip64ExtraId = 0x0001;

// Thrown inside this file only; find_zip_damage turns it into its answer.
struct Damage {
  std::string what;
};
[[noreturn]] void damaged(std::string what) { throw Damage{std::move(what)}; }

std::string hex32(uint64_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08llx", static_cast<unsigned long long>(value));
  return text;
}

// Entry names come from the file: non-printable bytes are escaped so that messages stay text.
std::string printable(std::string_view name) {
  std::string out;
  for (const unsigned char c : name.substr(0, 200)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return name.size() > 200 ? out + "..." : out;
}

bool fits(std::string_view zip, uint64_t offset, uint64_t size) {
  return offset <= zip.size() && size <= zip.size() - offset;
}

// A little-endian field of `width` bytes; `what` names the record for the message.
uint64_t field(std::string_view zip, uint64_t offset, int width, const std::string& what) {
  if (!fits(zip, offset, static_cast<uint64_t>(width))) damaged(what + " runs past the end of the file (truncated?)");
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(zip[offset + i]);
  return value;
}

std::string_view bytes(std::string_view zip, uint64_t offset, uint64_t size, const std::string& what) {
  if (!fits(zip, offset, size)) damaged(what + " runs past the end of the file (truncated?)");
  return zip.substr(offset, size);
}

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
  uint64_t end = 0;  // where the records after the central directory begin
};

// The end-of-central-directory record: the last signature whose comment reaches the file's end.
uint64_t find_end_record(std::string_view zip) {
  if (zip.size() >= kEndSize) {
    const uint64_t lowest = zip.size() - kEndSize - std::min<uint64_t>(zip.size() - kEndSize, kMaxCommentSize);
    for (uint64_t at = zip.size() - kEndSize + 1; at-- > lowest;) {
      if (field(zip, at, 4, "") == kEndSignature && at + kEndSize + field(zip, at + 20, 2, "") == zip.size()) return at;
    }
  }
  damaged("the end-of-central-directory record is missing (the file is truncated or not a zip archive)");
}

Directory read_directory(std::string_view zip) {
  const uint64_t end = find_end_record(zip);
  const std::string record = "the end-of-central-directory record";
  auto disk_number = [&](uint64_t at) { return field(zip, at, 2, record) % 0xFFFF; };  // 0xFFFF: see zip64
  if (disk_number(end + 4) != 0 || disk_number(end + 6) != 0 ||
      field(zip, end + 8, 2, record) != field(zip, end + 10, 2, record)) {
    damaged("the archive claims to span several disks (its end-of-central-directory record is damaged)");
  }
  Directory d{field(zip, end + 10, 2, record), field(zip, end + 16, 4, record), field(zip, end + 12, 4, record), end};
  const bool has_locator = end >= kZip64LocatorSize && field(zip, end - kZip64LocatorSize, 4, "") == kZip64LocatorSignature;
  if (has_locator) {
    const std::string locator = "the zip64 end-of-central-directory locator", record64 = "the zip64 end-of-central-directory record";
    const uint64_t at = field(zip, end - kZip64LocatorSize + 8, 8, locator);
    if (field(zip, at, 4, record64) != kZip64EndSignature || !fits(zip, at, kZip64EndSize)) damaged(record64 + " is missing");
    d = {field(zip, at + 32, 8, record64), field(zip, at + 48, 8, record64), field(zip, at + 40, 8, record64), at};
  } else if (d.entries == 0xFFFF || d.offset == 0xFFFFFFFF || d.size == 0xFFFFFFFF) {
    damaged("the archive announces zip64 records but has no zip64 end-of-central-directory locator");
  }
  if (d.offset > d.end || d.size != d.end - d.offset) {
    damaged("the central directory's recorded place (offset " + std::to_string(d.offset) + ", " +
            std::to_string(d.size) + " bytes) does not fit the file");
  }
  return d;
}

struct Entry {
  std::string name;
  uint64_t flags = 0, method = 0, crc = 0, compressed = 0, uncompressed = 0, local = 0;
};

// Sizes and the local header's offset that do not fit 32 bits are in the zip64 extra field, in
// this order, present only where the 32-bit field holds 0xFFFFFFFF.
void read_zip64_extra(std::string_view extra, Entry& e) {
  const std::string what = "entry '" + e.name + "': its zip64 extra field";
  for (uint64_t at = 0; at + 4 <= extra.size();) {
    const uint64_t id = field(extra, at, 2, what), size = field(extra, at + 2, 2, what);
    if (id == kZip64ExtraId) {
      uint64_t value_at = at + 4;
      for (uint64_t* value : {&e.uncompressed, &e.compressed, &e.local}) {
        if (*value != 0xFFFFFFFF) continue;
        if (value_at + 8 > at + 4 + size) damaged(what + " is too short");
        *value = field(extra, value_at, 8, what);
        value_at += 8;
      }
      return;
    }
    at += 4 + size;
  }
  damaged("entry '" + e.name + "' announces zip64 sizes but has no zip64 extra field");
}

// The central directory entry at `at`; moves `at` past it.
Entry read_central_entry(std::string_view zip, uint64_t& at, uint64_t index) {
  const std::string what = "central directory entry " + std::to_string(index);
  if (field(zip, at, 4, what) != kCentralSignature) damaged(what + " is malformed (no signature)");
  Entry e;
  const uint64_t name_size = field(zip, at + 28, 2, what), extra_size = field(zip, at + 30, 2, what);
  const uint64_t comment_size = field(zip, at + 32, 2, what);
  e.name = printable(bytes(zip, at + kCentralSize, name_size, what));
  e.flags = field(zip, at + 8, 2, what);
  e.method = field(zip, at + 10, 2, what);
  e.crc = field(zip, at + 16, 4, what);
  e.compressed = field(zip, at + 20, 4, what);
  e.uncompressed = field(zip, at + 24, 4, what);
  e.local = field(zip, at + 42, 4, what);
  if (e.compressed == 0xFFFFFFFF || e.uncompressed == 0xFFFFFFFF || e.local == 0xFFFFFFFF) {
    read_zip64_extra(bytes(zip, at + kCentralSize + name_size, extra_size, what), e);
  }
  at += kCentralSize + name_size + extra_size + comment_size;
  return e;
}

uint32_t stored_crc(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; at < data.size();) {  // zlib takes 32-bit lengths
    const uInt n = static_cast<uInt>(std::min<uint64_t>(data.size() - at, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + at), n);
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

// The CRC of a deflated entry's inflated bytes, inflated piecewise (never all in memory).
uint32_t inflated_crc(std::string_view data, const Entry& e) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) damaged("cannot start inflating entry '" + e.name + "'");
  struct End {
    z_stream* s;
    ~End() { inflateEnd(s); }
  } end{&stream};
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t consumed = 0, produced = 0;
  unsigned char out[1 << 16];
  for (int rc = Z_OK; rc != Z_STREAM_END;) {
    if (stream.avail_in == 0) {
      const uInt n = static_cast<uInt>(std::min<uint64_t>(data.size() - consumed, 1u << 30));
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + consumed));
      stream.avail_in = n;
      consumed += n;
    }
    stream.next_out = out;
    stream.avail_out = sizeof out;
    rc = inflate(&stream, Z_NO_FLUSH);
    const uInt n = static_cast<uInt>(sizeof out - stream.avail_out);
    crc = crc32(crc, out, n);
    produced += n;
    const bool stuck = rc == Z_BUF_ERROR && stream.avail_in == 0 && consumed == data.size();
    if ((rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) || stuck || produced > e.uncompressed) {
      damaged("entry '" + e.name + "': its deflated data is corrupt");
    }
  }
  if (produced != e.uncompressed) damaged("entry '" + e.name + "' inflates to another size than recorded");
  return static_cast<uint32_t>(crc);
}

// The local header repeats the central entry's method and, unless a data descriptor follows the
// data (flag bit 3, as LibTorch writes), its CRC and sizes (0xFFFFFFFF: in a zip64 extra field).
void check_local_fields(std::string_view zip, const Entry& e, const std::string& what) {
  bool same = field(zip, e.local + 8, 2, what) == e.method;
  if (!(field(zip, e.local + 6, 2, what) & 8)) {
    const uint64_t crc = field(zip, e.local + 14, 4, what), compressed = field(zip, e.local + 18, 4, what),
                   uncompressed = field(zip, e.local + 22, 4, what);
    same = same && crc == e.crc && (compressed == 0xFFFFFFFF || compressed == e.compressed) &&
           (uncompressed == 0xFFFFFFFF || uncompressed == e.uncompressed);
  }
  if (!same) damaged(what + " disagrees with the central directory");
}

void check_entry(std::string_view zip, const Entry& e) {
  const std::string what = "entry '" + e.name + "': its local header";
  if (field(zip, e.local, 4, what) != kLocalSignature) damaged(what + " is missing (no signature)");
  const uint64_t name_size = field(zip, e.local + 26, 2, what), extra_size = field(zip, e.local + 28, 2, what);
  if (printable(bytes(zip, e.local + kLocalSize, name_size, what)) != e.name) damaged(what + " names another entry");
  check_local_fields(zip, e, what);
  if (e.flags & 1) damaged("entry '" + e.name + "' is encrypted");
  const auto data = bytes(zip, e.local + kLocalSize + name_size + extra_size, e.compressed, "entry '" + e.name + "'");
  uint32_t computed = 0;
  if (e.method == 0) {
    if (e.compressed != e.uncompressed) damaged("entry '" + e.name + "' is stored but records two sizes");
    computed = stored_crc(data);
  } else if (e.method == 8) {
    computed = inflated_crc(data, e);
  } else {
    damaged("entry '" + e.name + "' uses compression method " + std::to_string(e.method) +
            "; only stored (0) and deflated (8) entries can be checked");
  }
  if (computed != e.crc) {
    damaged("entry '" + e.name + "' fails its CRC check (stored " + hex32(e.crc) + ", computed " + hex32(computed) + ")");
  }
}

}  // namespace

std::optional<std::string> find_zip_damage(std::string_view zip) {
  try {
    const Directory directory = read_directory(zip);
    uint64_t at = directory.offset, data_bytes = 0;
    for (uint64_t i = 0; i < directory.entries; ++i) {
      const Entry entry = read_central_entry(zip, at, i);
      if (at > directory.end) damaged("central directory entry " + std::to_string(i) + " runs past the directory");
      // Entries of a sound archive never share bytes: this bounds the work on crafted ones.
      data_bytes += std::min<uint64_t>(entry.compressed, zip.size() + 1);
      if (data_bytes > zip.size()) damaged("the entries' data overlap (the central directory is damaged)");
      check_entry(zip, entry);
    }
    if (at != directory.end) damaged("the central directory holds more than its recorded entries");
    return std::nullopt;
  } catch (const Damage& damage) {
    return damage.what;
  }
}

}  // namespace retriever
}  // namespace gradcache
