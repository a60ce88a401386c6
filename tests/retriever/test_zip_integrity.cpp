// find_zip_damage on archives built here byte by byte: stored, deflated and zip64 entries,
// intact and damaged.
#include "retriever/files/zip_integrity.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gr = gradcache::retriever;

namespace {

struct ZipEntry {
  std::string name, data;
  bool deflate = false;
};

// `value` little-endian in `width` bytes; bytes past the eighth are zero (a shift by 64 or more
// is undefined).
void put(std::string& out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>(i < 8 ? (value >> (8 * i)) & 0xFF : 0);
}

std::string raw_deflate(const std::string& data) {
  z_stream s{};
  deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&s, data.size()), '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

// A zip archive as LibTorch's writer lays it out. `zip64`: every size and offset in zip64
// extra fields, and the zip64 end records (as writers do for archives over 4 GiB).
std::string build_zip(const std::vector<ZipEntry>& entries, bool zip64 = false) {
  std::string zip, central;
  for (const auto& e : entries) {
    const uint64_t offset = zip.size();
    const uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size()));
    const std::string stored = e.deflate ? raw_deflate(e.data) : e.data;
    put(zip, 0x04034b50, 4);
    put(zip, 45, 2);
    put(zip, 0, 2);
    put(zip, e.deflate ? 8 : 0, 2);
    put(zip, 0, 4);  // time, date
    put(zip, crc, 4);
    put(zip, stored.size(), 4);
    put(zip, e.data.size(), 4);
    put(zip, e.name.size(), 2);
    put(zip, 0, 2);
    zip += e.name + stored;

    put(central, 0x02014b50, 4);
    put(central, 45, 2);
    put(central, 45, 2);
    put(central, 0, 2);
    put(central, e.deflate ? 8 : 0, 2);
    put(central, 0, 4);
    put(central, crc, 4);
    put(central, zip64 ? 0xFFFFFFFF : stored.size(), 4);
    put(central, zip64 ? 0xFFFFFFFF : e.data.size(), 4);
    put(central, e.name.size(), 2);
    put(central, zip64 ? 28 : 0, 2);
    put(central, 0, 2 + 2 + 2 + 4);  // comment length, disk, internal and external attributes
    put(central, zip64 ? 0xFFFFFFFF : offset, 4);
    central += e.name;
    if (zip64) {
      put(central, 0x0001, 2);
      put(central, 24, 2);
      put(central, e.data.size(), 8);
      put(central, stored.size(), 8);
      put(central, offset, 8);
    }
  }
  const uint64_t central_offset = zip.size();
  zip += central;
  if (zip64) {
    const uint64_t record = zip.size();
    put(zip, 0x06064b50, 4);
    put(zip, 44, 8);
    put(zip, 45, 2);
    put(zip, 45, 2);
    put(zip, 0, 4 + 4);
    put(zip, entries.size(), 8);
    put(zip, entries.size(), 8);
    put(zip, central.size(), 8);
    put(zip, central_offset, 8);
    put(zip, 0x07064b50, 4);
    put(zip, 0, 4);
    put(zip, record, 8);
    put(zip, 1, 4);
  }
  put(zip, 0x06054b50, 4);
  put(zip, 0, 2 + 2);
  put(zip, zip64 ? 0xFFFF : entries.size(), 2);
  put(zip, zip64 ? 0xFFFF : entries.size(), 2);
  put(zip, zip64 ? 0xFFFFFFFF : central.size(), 4);
  put(zip, zip64 ? 0xFFFFFFFF : central_offset, 4);
  put(zip, 0, 2);
  return zip;
}

std::vector<ZipEntry> sample_entries(bool deflate = false) {
  std::string weights;
  for (int i = 0; i < 4000; ++i) weights += static_cast<char>(i * 7 % 251);
  return {{"archive/data.pkl", "\x80\x02}q.", deflate}, {"archive/data/0", weights, deflate}};
}

std::string damage_of(const std::string& zip) { return gr::find_zip_damage(zip).value_or("intact"); }

}  // namespace

TEST(ZipIntegrity, IntactArchivesPass) {
  EXPECT_EQ(damage_of(build_zip(sample_entries())), "intact");
  EXPECT_EQ(damage_of(build_zip(sample_entries(), /*zip64=*/true)), "intact");
  EXPECT_EQ(damage_of(build_zip(sample_entries(/*deflate=*/true))), "intact");
  EXPECT_EQ(damage_of(build_zip({})), "intact");
}

TEST(ZipIntegrity, AFlippedDataByteFailsItsEntrysCrc) {
  for (bool zip64 : {false, true}) {
    auto zip = build_zip(sample_entries(), zip64);
    const auto at = zip.find("archive/data/0") + std::string("archive/data/0").size() + 1000;
    zip[at] = static_cast<char>(zip[at] ^ 0x10);
    const auto damage = damage_of(zip);
    EXPECT_NE(damage.find("entry 'archive/data/0' fails its CRC check (stored 0x"), std::string::npos) << damage;
    EXPECT_NE(damage.find(", computed 0x"), std::string::npos) << damage;
  }
}

TEST(ZipIntegrity, DeflatedEntriesAreInflatedAndChecked) {
  auto zip = build_zip(sample_entries(/*deflate=*/true));
  const auto at = zip.find("archive/data/0") + std::string("archive/data/0").size() + 5;
  zip[at] = static_cast<char>(zip[at] ^ 0x01);
  const auto damage = damage_of(zip);
  EXPECT_TRUE(damage.find("entry 'archive/data/0' fails its CRC check") != std::string::npos ||
              damage.find("entry 'archive/data/0': its deflated data is corrupt") != std::string::npos ||
              damage.find("entry 'archive/data/0' inflates to another size") != std::string::npos)
      << damage;
}

TEST(ZipIntegrity, TruncationAndGarbageAreNamed) {
  const auto zip = build_zip(sample_entries());
  EXPECT_NE(damage_of(zip.substr(0, zip.size() - 1)).find("end-of-central-directory record is missing"),
            std::string::npos);
  EXPECT_NE(damage_of(zip.substr(0, zip.size() / 2)).find("end-of-central-directory record is missing"),
            std::string::npos);
  EXPECT_NE(damage_of("").find("end-of-central-directory record is missing"), std::string::npos);
  EXPECT_NE(damage_of("this is not a zip archive at all").find("not a zip archive"), std::string::npos);
  // The end record survives, the entries it points to do not.
  const auto tail = zip.substr(zip.size() - 22);
  EXPECT_NE(damage_of(std::string(100, 'x') + tail).find("does not fit the file"), std::string::npos);
}

TEST(ZipIntegrity, DamagedStructureIsNamed) {
  auto zip = build_zip(sample_entries());
  const auto central = zip.find("PK\x01\x02");
  auto no_local = zip;
  no_local[0] = 'X';  // the first local header's signature
  EXPECT_NE(damage_of(no_local).find("entry 'archive/data.pkl': its local header is missing"), std::string::npos);
  auto other_method = zip;
  other_method[8] = other_method[central + 10] = 12;  // bzip2, in the local header and the central entry
  auto disagreeing = zip;
  disagreeing[central + 16] = static_cast<char>(disagreeing[central + 16] ^ 1);  // the central CRC only
  EXPECT_NE(damage_of(disagreeing).find("entry 'archive/data.pkl': its local header disagrees with the central "
                                        "directory"),
            std::string::npos);
  EXPECT_NE(damage_of(other_method).find("uses compression method 12"), std::string::npos);
  auto bad_central = zip;
  bad_central[central] = 'X';
  EXPECT_NE(damage_of(bad_central).find("central directory entry 0 is malformed"), std::string::npos);
  auto zip64_without_extra = zip;
  for (int i = 20; i < 28; ++i) zip64_without_extra[central + i] = '\xff';
  EXPECT_NE(damage_of(zip64_without_extra).find("has no zip64 extra field"), std::string::npos);
}

// Every single-byte change and every truncation of a small archive is answered, never crashes
// (run under the sanitizers by scripts/sanitize.sh); each change to an entry's data, or to the
// fields that locate and describe it, is reported.
TEST(ZipIntegrity, EveryFlipAndTruncationIsAnswered) {
  for (bool zip64 : {false, true}) {
    const std::string hello = "hello", weights(64, 'w');
    const auto zip = build_zip({{"a", hello}, {"archive/data/1", weights}}, zip64);
    size_t reported = 0;
    for (size_t i = 0; i < zip.size(); ++i) {
      auto flipped = zip;
      flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
      const bool found = gr::find_zip_damage(flipped).has_value();
      reported += found;
      const bool in_data = (i >= zip.find(hello) && i < zip.find(hello) + hello.size()) ||
                           (i >= zip.find(weights) && i < zip.find(weights) + weights.size());
      EXPECT_TRUE(found || !in_data) << "a change of data byte " << i << " went unnoticed";
      EXPECT_TRUE(gr::find_zip_damage(zip.substr(0, i)).has_value()) << "truncated to " << i;
    }
    // What goes unnoticed: version, time and attribute fields, and the padding of zip64 fields.
    EXPECT_GT(reported, zip.size() * 2 / 3) << "zip64 " << zip64;
  }
}
