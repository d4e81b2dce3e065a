// The main() of a fuzz target when it is not linked with libFuzzer (the GCC builds, and so the
// test command): every seed of the corpus once, then a fixed number of mutants of them, made
// by a seeded generator so that a run is repeatable and a failure reproduces with the same
// command. No coverage feedback: that is what the libFuzzer build (scripts/fuzz.sh) adds for
// long runs. Under the sanitizer build a memory error stops the run with its report; in every
// build a crash, an abort or an escaping exception fails it.
//
//   fuzz-TARGET [--mutations N] [--seed S] [--max-len BYTES] [--save-failing DIR] PATH...
//
// PATH is a seed file or a directory of them. When an input fails (a fatal signal, an abort, a
// sanitizer report), its number is printed and, with --save-failing, the input is written to
// DIR/failing-input (from the signal handler or the sanitizer's death callback, so a run costs
// no file write per input).
#include "helpers/formats/parse-util.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) // GCC
#define CNUAS_FUZZ_HAVE_SANITIZER 1
#elif defined(__has_feature) // clang
#if __has_feature(address_sanitizer)
#define CNUAS_FUZZ_HAVE_SANITIZER 1
#endif
#endif
#ifdef CNUAS_FUZZ_HAVE_SANITIZER
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
/// A target may say what its inputs reached (packets the engine took, QPs reset, ...).
extern "C" void CnuasFuzzSummary(std::FILE* out) __attribute__((weak));

namespace
{

using Bytes = std::vector<uint8_t>;

// The input being run, for the failure reporters (which may only use async-signal-safe calls).
const uint8_t* g_input = nullptr;
size_t g_inputSize = 0;
uint64_t g_inputNumber = 0;
char g_failingPath[4096] = "";

void
WriteAll(int fd, const void* data, size_t n)
{
    const char* p = static_cast<const char*>(data);
    while (n > 0)
    {
        const ssize_t w = write(fd, p, n);
        if (w <= 0)
        {
            return;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

/// Says which input failed and keeps it on disk: from a signal handler, so no stdio, no malloc.
void
ReportFailingInput()
{
    char line[96] = "fuzz: failed on input number ";
    size_t len = std::strlen(line);
    char digits[24];
    int d = 0;
    uint64_t v = g_inputNumber;
    do
    {
        digits[d++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v && d < 23);
    while (d > 0 && len < sizeof(line) - 2)
    {
        line[len++] = digits[--d];
    }
    line[len++] = '\n';
    WriteAll(2, line, len);
    if (g_failingPath[0] && g_input)
    {
        const int fd = open(g_failingPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
        {
            WriteAll(fd, g_input, g_inputSize);
            close(fd);
            WriteAll(2, "fuzz: the input is in ", 22);
            WriteAll(2, g_failingPath, std::strlen(g_failingPath));
            WriteAll(2, "\n", 1);
        }
    }
}

void
OnFatalSignal(int sig)
{
    if (!g_input)
    {
        WriteAll(2, "fuzz: failed outside any input (start-up or exit)\n", 50);
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    ReportFailingInput();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void
Usage()
{
    std::fprintf(stderr,
                 "usage: fuzz-TARGET [--mutations N] [--seed S] [--max-len BYTES] "
                 "[--save-failing DIR] SEED_FILE_OR_DIR...\n");
    std::exit(2);
}

uint64_t
NumberArg(const char* text)
{
    uint64_t v = 0;
    if (!ns3::ParseDecimalUint(text, UINT64_MAX, &v))
    {
        std::fprintf(stderr, "fuzz: '%s' is not a whole number\n", text);
        std::exit(2);
    }
    return v;
}

void
LoadSeeds(const std::filesystem::path& path, std::vector<Bytes>& seeds)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
    {
        std::vector<std::filesystem::path> files;
        for (const auto& e : std::filesystem::recursive_directory_iterator(path))
        {
            if (e.is_regular_file())
            {
                files.push_back(e.path());
            }
        }
        // Directory order differs between file systems: sorted, a run is the same everywhere.
        std::sort(files.begin(), files.end());
        for (const auto& f : files)
        {
            LoadSeeds(f, seeds);
        }
        return;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in)
    {
        std::fprintf(stderr, "fuzz: cannot read %s\n", path.c_str());
        std::exit(2);
    }
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Values that sit on the edges parsers get wrong: zero, one, sign bits, all ones.
constexpr uint64_t kInteresting[] = {0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF,
                                     0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF};

/// One random change to `b` (network formats are big-endian: wide values are written so).
void
MutateOnce(Bytes& b, const std::vector<Bytes>& seeds, std::mt19937_64& rng, size_t maxLen)
{
    auto pick = [&rng](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
    switch (rng() % 9)
    {
    case 0: // flip a bit
        if (!b.empty())
        {
            b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
        }
        break;
    case 1: // a random byte
        if (!b.empty())
        {
            b[pick(b.size())] = static_cast<uint8_t>(rng());
        }
        break;
    case 2: // an interesting 1, 2 or 4 byte value
    {
        const size_t width = size_t(1) << (rng() % 3);
        if (b.size() >= width)
        {
            const size_t at = pick(b.size() - width + 1);
            uint64_t v = kInteresting[pick(std::size(kInteresting))];
            if (rng() % 2)
            {
                v = b.size() + (rng() % 3) - 1; // a length field one off either way
            }
            for (size_t i = 0; i < width; ++i)
            {
                b[at + i] = static_cast<uint8_t>(v >> (8 * (width - 1 - i)));
            }
        }
        break;
    }
    case 3: // cut the end off
        if (!b.empty())
        {
            b.resize(pick(b.size()));
        }
        break;
    case 4: // insert random bytes
    {
        const size_t n = 1 + pick(16);
        if (b.size() + n <= maxLen)
        {
            Bytes ins(n);
            for (auto& x : ins)
            {
                x = static_cast<uint8_t>(rng());
            }
            b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), ins.begin(), ins.end());
        }
        break;
    }
    case 5: // erase a range
        if (!b.empty())
        {
            const size_t at = pick(b.size());
            const size_t n = 1 + pick(std::min<size_t>(16, b.size() - at));
            b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + n));
        }
        break;
    case 6: // repeat a range
        if (!b.empty())
        {
            const size_t at = pick(b.size());
            const size_t n = 1 + pick(std::min<size_t>(64, b.size() - at));
            if (b.size() + n <= maxLen)
            {
                Bytes copy(b.begin() + static_cast<long>(at),
                           b.begin() + static_cast<long>(at + n));
                b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), copy.begin(),
                         copy.end());
            }
        }
        break;
    case 7: // splice: our head, another seed's tail
    {
        const Bytes& other = seeds[pick(seeds.size())];
        if (!other.empty())
        {
            const size_t keep = pick(b.size() + 1);
            const size_t from = pick(other.size());
            b.resize(keep);
            b.insert(b.end(), other.begin() + static_cast<long>(from), other.end());
            if (b.size() > maxLen)
            {
                b.resize(maxLen);
            }
        }
        break;
    }
    default: // an ASCII digit or separator: the text readers' alphabet
        if (!b.empty())
        {
            static const char kText[] = "0123456789 \t\n=:,.-+#eE";
            b[pick(b.size())] = static_cast<uint8_t>(kText[pick(sizeof(kText) - 1)]);
        }
        break;
    }
}

} // namespace

int
main(int argc, char** argv)
{
    if (LLVMFuzzerInitialize)
    {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    uint64_t mutations = 10000;
    uint64_t seed = 1;
    size_t maxLen = 4096;
    std::string saveDir;
    std::vector<Bytes> seeds;
    for (int i = 1; i < argc; ++i)
    {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc)
            {
                Usage();
            }
            return argv[++i];
        };
        if (a == "--mutations")
        {
            mutations = NumberArg(next());
        }
        else if (a == "--seed")
        {
            seed = NumberArg(next());
        }
        else if (a == "--max-len")
        {
            maxLen = std::max<size_t>(1, NumberArg(next()));
        }
        else if (a == "--save-failing")
        {
            saveDir = next();
        }
        else if (a.rfind("--", 0) == 0)
        {
            Usage();
        }
        else
        {
            LoadSeeds(a, seeds);
        }
    }
    if (seeds.empty())
    {
        std::fprintf(stderr, "fuzz: no seeds (give a corpus file or directory)\n");
        return 2;
    }
    if (!saveDir.empty())
    {
        std::snprintf(g_failingPath, sizeof(g_failingPath), "%s/failing-input", saveDir.c_str());
    }
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL})
    {
        std::signal(sig, OnFatalSignal);
    }
#ifdef CNUAS_FUZZ_HAVE_SANITIZER
    // A sanitizer report ends the process without a signal: it calls this first.
    __sanitizer_set_death_callback([]() {
        if (g_input)
        {
            ReportFailingInput();
        }
    });
#endif
    const auto start = std::chrono::steady_clock::now();
    uint64_t number = 0;
    auto run = [&](const Bytes& input) {
        // A copy of exactly the input's size: the sanitizers see a read one byte past it.
        std::unique_ptr<uint8_t[]> exact(new uint8_t[input.size() ? input.size() : 1]);
        std::memcpy(exact.get(), input.data(), input.size());
        g_input = exact.get();
        g_inputSize = input.size();
        g_inputNumber = number++;
        try
        {
            LLVMFuzzerTestOneInput(input.empty() ? nullptr : exact.get(), input.size());
        }
        catch (const std::exception& e)
        {
            std::fprintf(stderr, "fuzz: an exception escaped the target: %s\n", e.what());
            std::abort();
        }
        g_input = nullptr;
    };
    for (const Bytes& s : seeds)
    {
        run(s);
    }
    std::mt19937_64 rng(seed);
    for (uint64_t m = 0; m < mutations; ++m)
    {
        Bytes b = seeds[rng() % seeds.size()];
        const int changes = 1 + static_cast<int>(rng() % 4);
        for (int c = 0; c < changes; ++c)
        {
            MutateOnce(b, seeds, rng, maxLen);
        }
        run(b);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %zu seeds and %llu mutants (seed %llu) in %.1f s, %.0f inputs/s: no "
                "crash, no sanitizer report\n",
                argv[0], seeds.size(), static_cast<unsigned long long>(mutations),
                static_cast<unsigned long long>(seed), secs,
                static_cast<double>(seeds.size() + mutations) / std::max(secs, 1e-9));
    if (CnuasFuzzSummary)
    {
        CnuasFuzzSummary(stdout);
    }
    return 0;
}
