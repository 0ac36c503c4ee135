//go:build linux

package sockmap

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// resultProgram is the verdict for an engine socket: it follows the MySQL packets of what
// arrived (a step per bpf_loop call, the state in the pair's slot so that a packet may span
// skbs), records each answer's end, and redirects the skb, whole, to the client socket stored
// under the engine socket's cookie in clients.
//
// A step either passes over the rest of the current packet (skip) or collects its first bytes
// (its 4-byte header and up to bufLen-4 bytes of payload) into the slot's buf; a packet whose
// first bytes are all in is classified by its first payload byte and the phase of the answer:
// the head's OK, ERR or LOCAL INFILE request, or a column count; the column definitions up to
// their EOF; the rows up to the EOF or ERR after them (an EOF is 0xFE shorter than 9 bytes: a
// row led by 0xFE is at least 9). A packet of 0xFFFFFF bytes is continued by the next, which is
// no packet of its own.
func resultProgram(clients, slots, state int) asm.Instructions {
	const (
		ctxSkb = -32 // the loop's context on the verdict's stack: the skb, then the slot
		ctxSt  = -24
		fnStep = "qf_result_step"
	)
	main := asm.Instructions{
		btf.WithFuncMetadata(asm.Mov.Reg(asm.R6, asm.R1), btfFunc("qf_results", 1)),
		asm.FnGetSocketCookie.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, slots),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "redirect"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, state),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "redirect"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R6, 0, asm.Word), // skb->len
		asm.StoreMem(asm.R7, offLen, asm.R1, asm.Word),
		asm.StoreImm(asm.R7, offOff, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.R7, offRedirected, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R7, offRedirected, asm.R2, asm.DWord),
		asm.StoreMem(asm.RFP, ctxSkb, asm.R6, asm.DWord),
		asm.StoreMem(asm.RFP, ctxSt, asm.R7, asm.DWord),
		asm.Mov.Imm(asm.R1, maxStepsPerSkb),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(fnStep),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, ctxSkb),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
		// Steps left over mean the framing is lost from here on.
		asm.LoadMem(asm.R1, asm.R7, offOff, asm.Word),
		asm.LoadMem(asm.R2, asm.R7, offLen, asm.Word),
		asm.JGE.Reg(asm.R1, asm.R2, "redirect"),
		asm.StoreImm(asm.R7, offLost, 1, asm.Word),

		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("redirect"),
		asm.LoadMapPtr(asm.R2, clients),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 0), // egress: out through the client socket's send path
		asm.FnSkRedirectHash.Call(),
		asm.Return(),
	}
	// The step: r9 the context, r6 the slot, r7 the offset in the skb, r8 the bytes left in it.
	lenenc := func(done string) asm.Instructions { // r5 = the size of the length-encoded integer led by r4
		return asm.Instructions{
			asm.Mov.Imm(asm.R5, 1),
			asm.JLT.Imm(asm.R4, 0xfb, done),
			asm.Mov.Imm(asm.R5, 3),
			asm.JEq.Imm(asm.R4, 0xfc, done),
			asm.Mov.Imm(asm.R5, 4),
			asm.JEq.Imm(asm.R4, 0xfd, done),
			asm.Mov.Imm(asm.R5, 9),
		}
	}
	step := asm.Instructions{
		btf.WithFuncMetadata(asm.Mov.Reg(asm.R9, asm.R2), btfFunc(fnStep, 2)).WithSymbol(fnStep),
		asm.LoadMem(asm.R6, asm.R9, 8, asm.DWord),
		asm.LoadMem(asm.R7, asm.R6, offOff, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, offLen, asm.Word),
		asm.JGE.Reg(asm.R7, asm.R8, "stop"),
		asm.Sub.Reg(asm.R8, asm.R7),
		asm.LoadMem(asm.R1, asm.R6, offSkip, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "collect"),
		asm.JLE.Reg(asm.R1, asm.R8, "skipn"),
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.LoadMem(asm.R2, asm.R6, offSkip, asm.Word).WithSymbol("skipn"),
		asm.Sub.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R6, offSkip, asm.R2, asm.Word),
		asm.Add.Reg(asm.R7, asm.R1),
		asm.StoreMem(asm.R6, offOff, asm.R7, asm.Word),
		asm.Ja.Label("ret0"),

		// Collect: r2 the bytes of the packet in buf, r3 those wanted there, r4 this step's.
		asm.LoadMem(asm.R2, asm.R6, offGot, asm.Word).WithSymbol("collect"),
		asm.Mov.Imm(asm.R3, 4),
		asm.JLT.Imm(asm.R2, 4, "want"),
		asm.LoadMem(asm.R3, asm.R6, offBuf, asm.Word),
		asm.And.Imm(asm.R3, 0xffffff),
		asm.JLE.Imm(asm.R3, bufLen-4, "w1"),
		asm.Mov.Imm(asm.R3, bufLen-4),
		asm.Add.Imm(asm.R3, 4).WithSymbol("w1"),
		asm.Mov.Reg(asm.R4, asm.R3).WithSymbol("want"),
		asm.Sub.Reg(asm.R4, asm.R2),
		asm.JEq.Imm(asm.R4, 0, "complete"),
		asm.JLE.Reg(asm.R4, asm.R8, "n1"),
		asm.Mov.Reg(asm.R4, asm.R8),
		asm.JGT.Imm(asm.R2, bufLen, "lost").WithSymbol("n1"),
		asm.JGT.Imm(asm.R4, bufLen, "lost"),
		asm.JEq.Imm(asm.R4, 0, "lost"),
		asm.StoreMem(asm.RFP, -8, asm.R2, asm.DWord),
		asm.StoreMem(asm.RFP, -16, asm.R4, asm.DWord),
		asm.StoreMem(asm.RFP, -24, asm.R3, asm.DWord),
		asm.LoadMem(asm.R1, asm.R9, 0, asm.DWord), // the skb
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, offBuf),
		asm.Add.Reg(asm.R3, asm.R2),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "lost"),
		asm.LoadMem(asm.R2, asm.RFP, -8, asm.DWord),
		asm.LoadMem(asm.R4, asm.RFP, -16, asm.DWord),
		asm.LoadMem(asm.R3, asm.RFP, -24, asm.DWord),
		asm.Add.Reg(asm.R7, asm.R4),
		asm.StoreMem(asm.R6, offOff, asm.R7, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R2),
		asm.Add.Reg(asm.R2, asm.R4),
		asm.StoreMem(asm.R6, offGot, asm.R2, asm.Word),
		asm.JLT.Imm(asm.R1, 4, "ret0"), // the header is in: what is wanted of the packet is known next step
		asm.JLT.Reg(asm.R2, asm.R3, "ret0"),

		// The packet's first bytes are in (r3 of them): r1 its length.
		asm.LoadMem(asm.R1, asm.R6, offBuf, asm.Word).WithSymbol("complete"),
		asm.And.Imm(asm.R1, 0xffffff),
		asm.Mov.Reg(asm.R2, asm.R3),
		asm.Sub.Imm(asm.R2, 4),
		asm.Mov.Reg(asm.R5, asm.R1),
		asm.Sub.Reg(asm.R5, asm.R2),
		asm.StoreMem(asm.R6, offSkip, asm.R5, asm.Word),
		asm.StoreImm(asm.R6, offGot, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.R6, offBytes, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.R6, offBytes, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, offCont, asm.Word),
		asm.Mov.Imm(asm.R5, 0),
		asm.JNE.Imm(asm.R1, 0xffffff, "c1"),
		asm.Mov.Imm(asm.R5, 1),
		asm.StoreMem(asm.R6, offCont, asm.R5, asm.Word).WithSymbol("c1"),
		asm.JNE.Imm(asm.R2, 0, "ret0"), // the rest of a long packet
		asm.JEq.Imm(asm.R1, 0, "ret0"),
		asm.LoadMem(asm.R2, asm.R6, offBuf+4, asm.Byte),
		asm.LoadMem(asm.R3, asm.R6, offPhase, asm.Word),
		asm.JEq.Imm(asm.R3, resRows, "rows"),
		asm.JEq.Imm(asm.R3, resColumns, "cols"),
		asm.JEq.Imm(asm.R2, 0xff, "err"),
		asm.JEq.Imm(asm.R2, 0x00, "ok"),
		asm.JEq.Imm(asm.R2, 0xfb, "ret0"), // LOCAL INFILE: the answer comes after the file
		asm.StoreImm(asm.R6, offPhase, resColumns, asm.Word),
		asm.Ja.Label("ret0"),

		asm.JEq.Imm(asm.R2, 0xff, "err").WithSymbol("cols"),
		asm.JNE.Imm(asm.R2, 0xfe, "ret0"),
		asm.JGE.Imm(asm.R1, 9, "ret0"),
		asm.StoreImm(asm.R6, offPhase, resRows, asm.Word),
		asm.Ja.Label("ret0"),

		asm.JEq.Imm(asm.R2, 0xff, "err").WithSymbol("rows"),
		asm.JNE.Imm(asm.R2, 0xfe, "row"),
		asm.JLT.Imm(asm.R1, 9, "eof"),
		asm.LoadMem(asm.R3, asm.R6, offRows, asm.DWord).WithSymbol("row"),
		asm.Add.Imm(asm.R3, 1),
		asm.StoreMem(asm.R6, offRows, asm.R3, asm.DWord),
		asm.Ja.Label("ret0"),

		// An EOF's status: payload 0xFE, warnings (2), status (2).
		asm.LoadMem(asm.R4, asm.R6, offBuf+7, asm.Byte).WithSymbol("eof"),
		asm.LoadMem(asm.R5, asm.R6, offBuf+8, asm.Byte),
		asm.LSh.Imm(asm.R5, 8),
		asm.Or.Reg(asm.R4, asm.R5),
		asm.Ja.Label("status"),

		// An OK's status: after its affected rows and insert id, each length-encoded.
		asm.Mov.Imm(asm.R3, 5).WithSymbol("ok"),
		asm.LoadMem(asm.R4, asm.R6, offBuf+5, asm.Byte),
	}
	step = append(step, lenenc("a1")...)
	step = append(step,
		asm.Add.Reg(asm.R3, asm.R5).WithSymbol("a1"),
		asm.Mov.Reg(asm.R4, asm.R6),
		asm.Add.Reg(asm.R4, asm.R3),
		asm.LoadMem(asm.R4, asm.R4, offBuf, asm.Byte),
	)
	step = append(step, lenenc("a2")...)
	step = append(step,
		asm.Add.Reg(asm.R3, asm.R5).WithSymbol("a2"),
		asm.Mov.Reg(asm.R4, asm.R6),
		asm.Add.Reg(asm.R4, asm.R3),
		asm.LoadMem(asm.R5, asm.R4, offBuf+1, asm.Byte),
		asm.LoadMem(asm.R4, asm.R4, offBuf, asm.Byte),
		asm.LSh.Imm(asm.R5, 8),
		asm.Or.Reg(asm.R4, asm.R5),

		asm.Mov.Reg(asm.R5, asm.R4).WithSymbol("status"),
		asm.And.Imm(asm.R5, 0x08), // SERVER_MORE_RESULTS_EXISTS: the next result's head follows
		asm.JEq.Imm(asm.R5, 0, "end"),
		asm.StoreImm(asm.R6, offPhase, resHead, asm.Word),
		asm.Ja.Label("ret0"),

		// An ERR: its code, marked.
		asm.LoadMem(asm.R4, asm.R6, offBuf+5, asm.Byte).WithSymbol("err"),
		asm.LoadMem(asm.R5, asm.R6, offBuf+6, asm.Byte),
		asm.LSh.Imm(asm.R5, 8),
		asm.Or.Reg(asm.R4, asm.R5),
		asm.Or.Imm(asm.R4, -1<<31),

		// The end: the fields first, the count last.
		asm.StoreMem(asm.R6, offLastStatus, asm.R4, asm.Word).WithSymbol("end"),
		asm.LoadMem(asm.R3, asm.R6, offRows, asm.DWord),
		asm.StoreMem(asm.R6, offLastRows, asm.R3, asm.DWord),
		asm.LoadMem(asm.R3, asm.R6, offBytes, asm.DWord),
		asm.StoreMem(asm.R6, offLastBytes, asm.R3, asm.DWord),
		asm.Mov.Imm(asm.R3, 0),
		asm.StoreMem(asm.R6, offRows, asm.R3, asm.DWord),
		asm.StoreMem(asm.R6, offBytes, asm.R3, asm.DWord),
		asm.StoreImm(asm.R6, offPhase, resHead, asm.Word),
	)
	for i := int16(0); i < bufLen; i += 8 {
		step = append(step,
			asm.LoadMem(asm.R3, asm.R6, offBuf+i, asm.DWord),
			asm.StoreMem(asm.R6, offLastBuf+i, asm.R3, asm.DWord))
	}
	step = append(step,
		asm.Mov.Imm(asm.R3, 1),
		xadd(asm.R6, offEnds, asm.R3),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("ret0"),
		asm.Return(),
		asm.StoreImm(asm.R6, offLost, 1, asm.Word).WithSymbol("lost"),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("stop"),
		asm.Return(),
	)
	return append(main, step...)
}

// xadd is an atomic add of src to the u64 at dst+off.
func xadd(dst asm.Register, off int16, src asm.Register) asm.Instruction {
	ins := asm.StoreXAdd(dst, src, asm.DWord)
	ins.Offset = off
	return ins
}

// btfFunc is the BTF a function needs where the program has a callback (the kernel asks for
// every function's func_info then): static, taking params 64-bit values, returning one.
func btfFunc(name string, params int) *btf.Func {
	u64 := &btf.Int{Name: "__u64", Size: 8}
	fp := make([]btf.FuncParam, params)
	for i := range fp {
		fp[i] = btf.FuncParam{Name: string(rune('a' + i)), Type: u64}
	}
	return &btf.Func{Name: name, Type: &btf.FuncProto{Return: u64, Params: fp}, Linkage: btf.StaticFunc}
}
