/* PCI bus id parsing and printing.
 *
 * Every tool prints bus ids a little differently (hwloc "0000:3b:00.0",
 * CUDA "0000:3B:00.0", nvidia-smi "00000000:3B:00.0"), so ids are compared as
 * numbers, never as strings. */
#include "gpucoll_topo.h"

#include <cctype>
#include <cstdio>
#include <tuple>

namespace gpucoll {
namespace topo {

bool PciBusId::operator<(const PciBusId &o) const
{
    return std::tie(domain, bus, device, function) < std::tie(o.domain, o.bus, o.device, o.function);
}

namespace {

/* Reads up to max_digits hex digits at text[*pos]; false if there are none. */
bool read_hex(const std::string &text, size_t *pos, size_t max_digits, uint32_t *value)
{
    uint32_t v = 0;
    size_t n = 0;
    while (*pos < text.size() && n < max_digits && std::isxdigit((unsigned char)text[*pos])) {
        const char c = (char)std::tolower((unsigned char)text[*pos]);
        v = v * 16 + (uint32_t)(c <= '9' ? c - '0' : c - 'a' + 10);
        ++*pos;
        ++n;
    }
    *value = v;
    return n > 0;
}

bool expect(const std::string &text, size_t *pos, char c)
{
    if (*pos < text.size() && text[*pos] == c) {
        ++*pos;
        return true;
    }
    return false;
}

} // namespace

bool parse_pci_bus_id(const std::string &text, PciBusId *out)
{
    /* Split on ':' to know whether the domain is present. */
    size_t colons = 0;
    for (char c : text)
        colons += c == ':';
    if (colons < 1 || colons > 2)
        return false;

    PciBusId id;
    size_t pos = 0;
    if (colons == 2 && !(read_hex(text, &pos, 8, &id.domain) && expect(text, &pos, ':')))
        return false;
    if (!(read_hex(text, &pos, 2, &id.bus) && expect(text, &pos, ':')))
        return false;
    if (!read_hex(text, &pos, 2, &id.device) || id.device > 31)
        return false;
    if (expect(text, &pos, '.')) {
        if (!read_hex(text, &pos, 1, &id.function) || id.function > 7)
            return false;
    }
    if (pos != text.size())
        return false;
    *out = id;
    return true;
}

std::string format_pci_bus_id(const PciBusId &id)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", id.domain, id.bus, id.device, id.function);
    return buf;
}

} // namespace topo
} // namespace gpucoll
