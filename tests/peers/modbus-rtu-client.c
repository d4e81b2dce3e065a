/*
 * A Modbus RTU master built on Debian's libmodbus, for the pty-bridge tests: it opens the port,
 * reads a span of holding registers, tries a write the device must refuse, writes and reads back
 * a writable register, closes, and does it all again OPENS times (each time a new
 * modbus_new_rtu/modbus_connect, as a poller that restarts would).
 *
 * usage: cnuas-peer-modbus-client DEVICE BAUD PARITY(N|E|O) SLAVE OPENS READ_REG READ_COUNT
 *                                 PROTECTED_REG WRITABLE_REG
 * Prints one line per step, e.g.
 *   open 0 read 79: 52224 3763 624 24000
 *   open 0 write 79: exception 2
 *   open 0 write 100: ok 1000
 *   open 0 readback 100: 1000
 * and exits 0 when every open and connect worked (the caller judges the values), 2 otherwise.
 *
 * With two more arguments ENABLE_REG ENABLE_BIT (an ORv3 PSU: 94 0, the write-enable bit of
 * PSU_Setting_Register), after the refused write the client sets that bit by read-modify-write
 * (as rackmon does before a protected write), writes and reads back WRITABLE_REG (the caller
 * passes the protected register again), then clears the bit, printing
 *   open 0 enable 94: ok 1
 *   open 0 disable 94: ok 0
 */
#include <errno.h>
#include <modbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A master that gets no answer within its response timeout tries again, as rackmon and every
 * poller does (Modbus over serial line v1.02 §2.4.1: the timeout is the master's own choice, a
 * lost or late frame is normal on a bus). A loaded machine can delay the simulator past the
 * timeout; without a retry one late answer would fail a whole run. Each retry is reported on
 * stderr ("note: ..."), so none is silent; the input is flushed first so that a late answer
 * to the previous try is not taken for the answer to this one.
 */
enum
{
    kTries = 3
};

static int
read_regs(modbus_t* ctx, int open, int reg, int count, uint16_t* dest)
{
    int rc = -1;
    for (int t = 0; t < kTries; ++t)
    {
        rc = modbus_read_registers(ctx, reg, count, dest);
        if (rc != -1 || errno != ETIMEDOUT)
        {
            break;
        }
        fprintf(stderr, "note: open %d read %d: timed out, try %d of %d\n", open, reg, t + 1,
                kTries);
        usleep(50000);
        modbus_flush(ctx);
    }
    return rc;
}

static int
write_reg(modbus_t* ctx, int open, int reg, uint16_t value)
{
    int rc = -1;
    for (int t = 0; t < kTries; ++t)
    {
        rc = modbus_write_register(ctx, reg, value);
        if (rc != -1 || errno != ETIMEDOUT)
        {
            break;
        }
        fprintf(stderr, "note: open %d write %d: timed out, try %d of %d\n", open, reg, t + 1,
                kTries);
        usleep(50000);
        modbus_flush(ctx);
    }
    return rc;
}

static void
report_error(int open, const char* what, int reg)
{
    if (errno > MODBUS_ENOBASE && errno < MODBUS_ENOBASE + 0x100)
    {
        printf("open %d %s %d: exception %d\n", open, what, reg, errno - MODBUS_ENOBASE);
    }
    else
    {
        printf("open %d %s %d: error %s\n", open, what, reg, modbus_strerror(errno));
    }
}

int
main(int argc, char** argv)
{
    if (argc != 10 && argc != 12)
    {
        fprintf(stderr,
                "usage: %s DEVICE BAUD PARITY SLAVE OPENS READ_REG READ_COUNT PROTECTED_REG "
                "WRITABLE_REG [ENABLE_REG ENABLE_BIT]\n",
                argv[0]);
        return 1;
    }
    const char* device = argv[1];
    const int baud = atoi(argv[2]);
    const char parity = argv[3][0];
    const int slave = atoi(argv[4]);
    const int opens = atoi(argv[5]);
    const int readReg = atoi(argv[6]);
    const int readCount = atoi(argv[7]);
    const int protectedReg = atoi(argv[8]);
    const int writableReg = atoi(argv[9]);
    const int enableReg = argc == 12 ? atoi(argv[10]) : -1;
    const int enableBit = argc == 12 ? atoi(argv[11]) : 0;
    if (enableReg >= 0 && (enableBit < 0 || enableBit > 15))
    {
        fprintf(stderr, "ENABLE_BIT must be 0..15\n");
        return 1;
    }
    if (readCount < 1 || readCount > 125)
    {
        fprintf(stderr, "READ_COUNT must be 1..125\n");
        return 1;
    }

    for (int k = 0; k < opens; ++k)
    {
        modbus_t* ctx = modbus_new_rtu(device, baud, parity, 8, 1);
        if (ctx == NULL)
        {
            printf("open %d new: error %s\n", k, modbus_strerror(errno));
            return 2;
        }
        modbus_set_slave(ctx, slave);
        modbus_set_response_timeout(ctx, 1, 0);
        if (modbus_connect(ctx) != 0)
        {
            printf("open %d connect: error %s\n", k, modbus_strerror(errno));
            modbus_free(ctx);
            return 2;
        }

        uint16_t regs[125];
        if (read_regs(ctx, k, readReg, readCount, regs) == readCount)
        {
            printf("open %d read %d:", k, readReg);
            for (int i = 0; i < readCount; ++i)
            {
                printf(" %u", regs[i]);
            }
            printf("\n");
        }
        else
        {
            report_error(k, "read", readReg);
        }

        if (write_reg(ctx, k, protectedReg, 1) == 1)
        {
            printf("open %d write %d: ok 1\n", k, protectedReg);
        }
        else
        {
            report_error(k, "write", protectedReg);
        }

        uint16_t settings = 0;
        if (enableReg >= 0)
        {
            if (read_regs(ctx, k, enableReg, 1, &settings) == 1 &&
                write_reg(ctx, k, enableReg, settings | (1u << enableBit)) == 1)
            {
                printf("open %d enable %d: ok 1\n", k, enableReg);
            }
            else
            {
                report_error(k, "enable", enableReg);
            }
        }

        const uint16_t value = (uint16_t)(1000 + k);
        if (write_reg(ctx, k, writableReg, value) == 1)
        {
            printf("open %d write %d: ok %u\n", k, writableReg, value);
        }
        else
        {
            report_error(k, "write", writableReg);
        }
        uint16_t back = 0;
        if (read_regs(ctx, k, writableReg, 1, &back) == 1)
        {
            printf("open %d readback %d: %u\n", k, writableReg, back);
        }
        else
        {
            report_error(k, "readback", writableReg);
        }
        if (enableReg >= 0)
        {
            if (write_reg(ctx, k, enableReg, settings & ~(1u << enableBit)) == 1)
            {
                printf("open %d disable %d: ok 0\n", k, enableReg);
            }
            else
            {
                report_error(k, "disable", enableReg);
            }
        }

        modbus_close(ctx);
        modbus_free(ctx);
    }
    fflush(stdout);
    return 0;
}
