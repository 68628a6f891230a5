AVX2 row kernel, 2540 bytes of machine code, 0 micro-kernel calls per tile, 1 values held in registers:
  0000  push rbx
  0001  push rbp
  0002  push r12
  0004  push r13
  0006  push r14
  0008  push r15
  000a  mov rax, rsp
  000d  and rsp, 0xffffffffffffffc0
  0011  sub rsp, 0x1000
  0018  or qword ptr [rsp], 0
  001d  sub rsp, 0x80
  0024  mov [rsp], rax
  0028  mov [rsp+8], rsi
  002d  mov [rsp+0x10], rdx
  0032  mov rax, [rdi]
  0035  mov [rsp+0x28], rax
  003a  mov rax, [rdi+8]
  003e  mov [rsp+0x30], rax
  0043  mov rax, [rsp+8]
  0048  cmp rax, [rsp+0x10]
  004d  jge 0x95a
  0053  mov [rsp+0x20], rax
  0058  mov rcx, [rsp+0x28]
  005d  mov rax, [rsp+0x20]
  0062  imul rax, 0xfa0
  0069  add rcx, rax
  006c  mov [rsp+0x38], rcx
  0071  mov rcx, [rsp+0x30]
  0076  mov rax, [rsp+0x20]
  007b  imul rax, 0xfa0
  0082  add rcx, rax
  0085  mov [rsp+0x40], rcx
  008a  mov dword ptr [rsp+0x50], 0xff800000
  0092  mov rdx, [rsp+0x38]
  0097  vpxor ymm4, ymm4, ymm4
  009b  xor rbx, rbx
  009e  vbroadcastss ymm0, [0x96c]
  00a7  vbroadcastss ymm1, [0x96c]
  00b0  vbroadcastss ymm2, [0x96c]
  00b9  vbroadcastss ymm3, [0x96c]
  00c2  lea r15, [rbx+0x3e8]
  00c9  lea r14, [r15-0x20]
  00cd  cmp rbx, r14
  00d0  jg short 0x126
  00d2  vmovups ymm5, [rdx+rbx*4]
  00d7  vcmpunordps ymm6, ymm5, ymm5
  00dc  vpor ymm4, ymm4, ymm6
  00e0  vmaxps ymm0, ymm5, ymm0
  00e4  vmovups ymm5, [rdx+rbx*4+0x20]
  00ea  vcmpunordps ymm6, ymm5, ymm5
  00ef  vpor ymm4, ymm4, ymm6
  00f3  vmaxps ymm1, ymm5, ymm1
  00f7  vmovups ymm5, [rdx+rbx*4+0x40]
  00fd  vcmpunordps ymm6, ymm5, ymm5
  0102  vpor ymm4, ymm4, ymm6
  0106  vmaxps ymm2, ymm5, ymm2
  010a  vmovups ymm5, [rdx+rbx*4+0x60]
  0110  vcmpunordps ymm6, ymm5, ymm5
  0115  vpor ymm4, ymm4, ymm6
  0119  vmaxps ymm3, ymm5, ymm3
  011d  add rbx, 0x20
  0121  cmp rbx, r14
  0124  jle short 0xd2
  0126  lea r14, [r15-8]
  012a  cmp rbx, r14
  012d  jg short 0x14a
  012f  vmovups ymm5, [rdx+rbx*4]
  0134  vcmpunordps ymm6, ymm5, ymm5
  0139  vpor ymm4, ymm4, ymm6
  013d  vmaxps ymm0, ymm5, ymm0
  0141  add rbx, 8
  0145  cmp rbx, r14
  0148  jle short 0x12f
  014a  cmp rbx, r15
  014d  jge short 0x187
  014f  mov rcx, r15
  0152  sub rcx, rbx
  0155  lea rax, [0x9ac]
  015c  neg rcx
  015f  vmovdqu ymm15, [rax+rcx*4+0x20]
  0165  vmaskmovps ymm5, ymm15, [rdx+rbx*4]
  016b  vbroadcastss ymm7, [0x96c]
  0174  vblendvps ymm6, ymm7, ymm5, ymm15
  017a  vcmpunordps ymm7, ymm6, ymm6
  017f  vpor ymm4, ymm4, ymm7
  0183  vmaxps ymm0, ymm6, ymm0
  0187  vmaxps ymm0, ymm0, ymm1
  018b  vmaxps ymm2, ymm2, ymm3
  018f  vmaxps ymm0, ymm0, ymm2
  0193  vperm2f128 ymm5, ymm0, ymm0, 1
  0199  vmaxps ymm0, ymm0, ymm5
  019d  vpermilps ymm5, ymm0, 0x4e
  01a3  vmaxps ymm0, ymm0, ymm5
  01a7  vpermilps ymm5, ymm0, 0xb1
  01ad  vmaxps ymm0, ymm0, ymm5
  01b1  vmaxss xmm0, xmm0, [rsp+0x50]
  01b7  vmovss [rsp+0x50], xmm0
  01bd  mov eax, [rsp+0x50]
  01c1  mov [rsp+0x48], eax
  01c5  vptest ymm4, ymm4
  01ca  je short 0x1d4
  01cc  mov dword ptr [rsp+0x48], 0x7fc00000
  01d4  mov qword ptr [rsp+0x60], 0
  01dd  mov rdx, [rsp+0x38]
  01e2  vbroadcastss ymm4, [rsp+0x48]
  01e9  xor rbx, rbx
  01ec  vpxor ymm0, ymm0, ymm0
  01f0  vpxor ymm1, ymm1, ymm1
  01f4  vpxor ymm2, ymm2, ymm2
  01f8  vpxor ymm3, ymm3, ymm3
  01fc  lea r15, [rbx+0x3e8]
  0203  lea r14, [r15-0x20]
  0207  cmp rbx, r14
  020a  jg 0x5fc
  0210  vmovups ymm5, [rdx+rbx*4]
  0215  vsubps ymm6, ymm5, ymm4
  0219  vbroadcastss ymm5, [0x970]
  0222  vminps ymm7, ymm5, ymm6
  0226  vbroadcastss ymm5, [0x974]
  022f  vmaxps ymm8, ymm5, ymm7
  0233  vbroadcastss ymm7, [0x978]
  023c  vbroadcastss ymm5, [0x97c]
  0245  vfmadd213ps ymm5, ymm8, ymm7
  024a  vsubps ymm9, ymm5, ymm7
  024e  vbroadcastss ymm7, [0x980]
  0257  vfmadd231ps ymm8, ymm9, ymm7
  025c  vbroadcastss ymm7, [0x984]
  0265  vfmadd231ps ymm8, ymm9, ymm7
  026a  vbroadcastss ymm7, [0x988]
  0273  vbroadcastss ymm10, [0x98c]
  027c  vfmadd213ps ymm7, ymm8, ymm10
  0281  vbroadcastss ymm10, [0x990]
  028a  vfmadd213ps ymm7, ymm8, ymm10
  028f  vbroadcastss ymm10, [0x994]
  0298  vfmadd213ps ymm7, ymm8, ymm10
  029d  vbroadcastss ymm10, [0x998]
  02a6  vfmadd213ps ymm7, ymm8, ymm10
  02ab  vbroadcastss ymm10, [0x99c]
  02b4  vfmadd213ps ymm7, ymm8, ymm10
  02b9  vbroadcastss ymm10, [0x99c]
  02c2  vfmadd213ps ymm7, ymm8, ymm10
  02c7  vbroadcastss ymm10, [0x9a0]
  02d0  vbroadcastss ymm8, [0x9a4]
  02d9  vfmadd213ps ymm9, ymm8, ymm10
  02de  vpslld ymm10, ymm9, 0x17
  02e4  vpsubd ymm8, ymm5, ymm9
  02e9  vpslld ymm9, ymm8, 0x17
  02ef  vmulps ymm8, ymm7, ymm10
  02f4  vmulps ymm10, ymm8, ymm9
  02f9  vaddps ymm0, ymm0, ymm10
  02fe  vmovups [rsp+rbx*4+0x80], ymm10
  0307  vmovups ymm5, [rdx+rbx*4+0x20]
  030d  vsubps ymm6, ymm5, ymm4
  0311  vbroadcastss ymm5, [0x970]
  031a  vminps ymm7, ymm5, ymm6
  031e  vbroadcastss ymm5, [0x974]
  0327  vmaxps ymm8, ymm5, ymm7
  032b  vbroadcastss ymm7, [0x978]
  0334  vbroadcastss ymm5, [0x97c]
  033d  vfmadd213ps ymm5, ymm8, ymm7
  0342  vsubps ymm9, ymm5, ymm7
  0346  vbroadcastss ymm7, [0x980]
  034f  vfmadd231ps ymm8, ymm9, ymm7
  0354  vbroadcastss ymm7, [0x984]
  035d  vfmadd231ps ymm8, ymm9, ymm7
  0362  vbroadcastss ymm7, [0x988]
  036b  vbroadcastss ymm10, [0x98c]
  0374  vfmadd213ps ymm7, ymm8, ymm10
  0379  vbroadcastss ymm10, [0x990]
  0382  vfmadd213ps ymm7, ymm8, ymm10
  0387  vbroadcastss ymm10, [0x994]
  0390  vfmadd213ps ymm7, ymm8, ymm10
  0395  vbroadcastss ymm10, [0x998]
  039e  vfmadd213ps ymm7, ymm8, ymm10
  03a3  vbroadcastss ymm10, [0x99c]
  03ac  vfmadd213ps ymm7, ymm8, ymm10
  03b1  vbroadcastss ymm10, [0x99c]
  03ba  vfmadd213ps ymm7, ymm8, ymm10
  03bf  vbroadcastss ymm10, [0x9a0]
  03c8  vbroadcastss ymm8, [0x9a4]
  03d1  vfmadd213ps ymm9, ymm8, ymm10
  03d6  vpslld ymm10, ymm9, 0x17
  03dc  vpsubd ymm8, ymm5, ymm9
  03e1  vpslld ymm9, ymm8, 0x17
  03e7  vmulps ymm8, ymm7, ymm10
  03ec  vmulps ymm10, ymm8, ymm9
  03f1  vaddps ymm1, ymm1, ymm10
  03f6  vmovups [rsp+rbx*4+0xa0], ymm10
  03ff  vmovups ymm5, [rdx+rbx*4+0x40]
  0405  vsubps ymm6, ymm5, ymm4
  0409  vbroadcastss ymm5, [0x970]
  0412  vminps ymm7, ymm5, ymm6
  0416  vbroadcastss ymm5, [0x974]
  041f  vmaxps ymm8, ymm5, ymm7
  0423  vbroadcastss ymm7, [0x978]
  042c  vbroadcastss ymm5, [0x97c]
  0435  vfmadd213ps ymm5, ymm8, ymm7
  043a  vsubps ymm9, ymm5, ymm7
  043e  vbroadcastss ymm7, [0x980]
  0447  vfmadd231ps ymm8, ymm9, ymm7
  044c  vbroadcastss ymm7, [0x984]
  0455  vfmadd231ps ymm8, ymm9, ymm7
  045a  vbroadcastss ymm7, [0x988]
  0463  vbroadcastss ymm10, [0x98c]
  046c  vfmadd213ps ymm7, ymm8, ymm10
  0471  vbroadcastss ymm10, [0x990]
  047a  vfmadd213ps ymm7, ymm8, ymm10
  047f  vbroadcastss ymm10, [0x994]
  0488  vfmadd213ps ymm7, ymm8, ymm10
  048d  vbroadcastss ymm10, [0x998]
  0496  vfmadd213ps ymm7, ymm8, ymm10
  049b  vbroadcastss ymm10, [0x99c]
  04a4  vfmadd213ps ymm7, ymm8, ymm10
  04a9  vbroadcastss ymm10, [0x99c]
  04b2  vfmadd213ps ymm7, ymm8, ymm10
  04b7  vbroadcastss ymm10, [0x9a0]
  04c0  vbroadcastss ymm8, [0x9a4]
  04c9  vfmadd213ps ymm9, ymm8, ymm10
  04ce  vpslld ymm10, ymm9, 0x17
  04d4  vpsubd ymm8, ymm5, ymm9
  04d9  vpslld ymm9, ymm8, 0x17
  04df  vmulps ymm8, ymm7, ymm10
  04e4  vmulps ymm10, ymm8, ymm9
  04e9  vaddps ymm2, ymm2, ymm10
  04ee  vmovups [rsp+rbx*4+0xc0], ymm10
  04f7  vmovups ymm5, [rdx+rbx*4+0x60]
  04fd  vsubps ymm6, ymm5, ymm4
  0501  vbroadcastss ymm5, [0x970]
  050a  vminps ymm7, ymm5, ymm6
  050e  vbroadcastss ymm5, [0x974]
  0517  vmaxps ymm8, ymm5, ymm7
  051b  vbroadcastss ymm7, [0x978]
  0524  vbroadcastss ymm5, [0x97c]
  052d  vfmadd213ps ymm5, ymm8, ymm7
  0532  vsubps ymm9, ymm5, ymm7
  0536  vbroadcastss ymm7, [0x980]
  053f  vfmadd231ps ymm8, ymm9, ymm7
  0544  vbroadcastss ymm7, [0x984]
  054d  vfmadd231ps ymm8, ymm9, ymm7
  0552  vbroadcastss ymm7, [0x988]
  055b  vbroadcastss ymm10, [0x98c]
  0564  vfmadd213ps ymm7, ymm8, ymm10
  0569  vbroadcastss ymm10, [0x990]
  0572  vfmadd213ps ymm7, ymm8, ymm10
  0577  vbroadcastss ymm10, [0x994]
  0580  vfmadd213ps ymm7, ymm8, ymm10
  0585  vbroadcastss ymm10, [0x998]
  058e  vfmadd213ps ymm7, ymm8, ymm10
  0593  vbroadcastss ymm10, [0x99c]
  059c  vfmadd213ps ymm7, ymm8, ymm10
  05a1  vbroadcastss ymm10, [0x99c]
  05aa  vfmadd213ps ymm7, ymm8, ymm10
  05af  vbroadcastss ymm10, [0x9a0]
  05b8  vbroadcastss ymm8, [0x9a4]
  05c1  vfmadd213ps ymm9, ymm8, ymm10
  05c6  vpslld ymm10, ymm9, 0x17
  05cc  vpsubd ymm8, ymm5, ymm9
  05d1  vpslld ymm9, ymm8, 0x17
  05d7  vmulps ymm8, ymm7, ymm10
  05dc  vmulps ymm10, ymm8, ymm9
  05e1  vaddps ymm3, ymm3, ymm10
  05e6  vmovups [rsp+rbx*4+0xe0], ymm10
  05ef  add rbx, 0x20
  05f3  cmp rbx, r14
  05f6  jle 0x210
  05fc  lea r14, [r15-8]
  0600  cmp rbx, r14
  0603  jg 0x70d
  0609  vmovups ymm5, [rdx+rbx*4]
  060e  vsubps ymm6, ymm5, ymm4
  0612  vbroadcastss ymm5, [0x970]
  061b  vminps ymm7, ymm5, ymm6
  061f  vbroadcastss ymm5, [0x974]
  0628  vmaxps ymm8, ymm5, ymm7
  062c  vbroadcastss ymm7, [0x978]
  0635  vbroadcastss ymm5, [0x97c]
  063e  vfmadd213ps ymm5, ymm8, ymm7
  0643  vsubps ymm9, ymm5, ymm7
  0647  vbroadcastss ymm7, [0x980]
  0650  vfmadd231ps ymm8, ymm9, ymm7
  0655  vbroadcastss ymm7, [0x984]
  065e  vfmadd231ps ymm8, ymm9, ymm7
  0663  vbroadcastss ymm7, [0x988]
  066c  vbroadcastss ymm10, [0x98c]
  0675  vfmadd213ps ymm7, ymm8, ymm10
  067a  vbroadcastss ymm10, [0x990]
  0683  vfmadd213ps ymm7, ymm8, ymm10
  0688  vbroadcastss ymm10, [0x994]
  0691  vfmadd213ps ymm7, ymm8, ymm10
  0696  vbroadcastss ymm10, [0x998]
  069f  vfmadd213ps ymm7, ymm8, ymm10
  06a4  vbroadcastss ymm10, [0x99c]
  06ad  vfmadd213ps ymm7, ymm8, ymm10
  06b2  vbroadcastss ymm10, [0x99c]
  06bb  vfmadd213ps ymm7, ymm8, ymm10
  06c0  vbroadcastss ymm10, [0x9a0]
  06c9  vbroadcastss ymm8, [0x9a4]
  06d2  vfmadd213ps ymm9, ymm8, ymm10
  06d7  vpslld ymm10, ymm9, 0x17
  06dd  vpsubd ymm8, ymm5, ymm9
  06e2  vpslld ymm9, ymm8, 0x17
  06e8  vmulps ymm8, ymm7, ymm10
  06ed  vmulps ymm10, ymm8, ymm9
  06f2  vaddps ymm0, ymm0, ymm10
  06f7  vmovups [rsp+rbx*4+0x80], ymm10
  0700  add rbx, 8
  0704  cmp rbx, r14
  0707  jle 0x609
  070d  cmp rbx, r15
  0710  jge 0x833
  0716  mov rcx, r15
  0719  sub rcx, rbx
  071c  lea rax, [0x9ac]
  0723  neg rcx
  0726  vmovdqu ymm15, [rax+rcx*4+0x20]
  072c  vmaskmovps ymm5, ymm15, [rdx+rbx*4]
  0732  vsubps ymm6, ymm5, ymm4
  0736  vbroadcastss ymm5, [0x970]
  073f  vminps ymm7, ymm5, ymm6
  0743  vbroadcastss ymm5, [0x974]
  074c  vmaxps ymm8, ymm5, ymm7
  0750  vbroadcastss ymm7, [0x978]
  0759  vbroadcastss ymm5, [0x97c]
  0762  vfmadd213ps ymm5, ymm8, ymm7
  0767  vsubps ymm9, ymm5, ymm7
  076b  vbroadcastss ymm7, [0x980]
  0774  vfmadd231ps ymm8, ymm9, ymm7
  0779  vbroadcastss ymm7, [0x984]
  0782  vfmadd231ps ymm8, ymm9, ymm7
  0787  vbroadcastss ymm7, [0x988]
  0790  vbroadcastss ymm10, [0x98c]
  0799  vfmadd213ps ymm7, ymm8, ymm10
  079e  vbroadcastss ymm10, [0x990]
  07a7  vfmadd213ps ymm7, ymm8, ymm10
  07ac  vbroadcastss ymm10, [0x994]
  07b5  vfmadd213ps ymm7, ymm8, ymm10
  07ba  vbroadcastss ymm10, [0x998]
  07c3  vfmadd213ps ymm7, ymm8, ymm10
  07c8  vbroadcastss ymm10, [0x99c]
  07d1  vfmadd213ps ymm7, ymm8, ymm10
  07d6  vbroadcastss ymm10, [0x99c]
  07df  vfmadd213ps ymm7, ymm8, ymm10
  07e4  vbroadcastss ymm10, [0x9a0]
  07ed  vbroadcastss ymm8, [0x9a4]
  07f6  vfmadd213ps ymm9, ymm8, ymm10
  07fb  vpslld ymm10, ymm9, 0x17
  0801  vpsubd ymm8, ymm5, ymm9
  0806  vpslld ymm9, ymm8, 0x17
  080c  vmulps ymm8, ymm7, ymm10
  0811  vmulps ymm10, ymm8, ymm9
  0816  vbroadcastss ymm9, [0x9a8]
  081f  vblendvps ymm6, ymm9, ymm10, ymm15
  0825  vaddps ymm0, ymm0, ymm6
  0829  vmaskmovps [rsp+rbx*4+0x80], ymm15, ymm10
  0833  vaddps ymm0, ymm0, ymm1
  0837  vaddps ymm2, ymm2, ymm3
  083b  vaddps ymm0, ymm0, ymm2
  083f  vperm2f128 ymm5, ymm0, ymm0, 1
  0845  vaddps ymm0, ymm0, ymm5
  0849  vpermilps ymm5, ymm0, 0x4e
  084f  vaddps ymm0, ymm0, ymm5
  0853  vpermilps ymm5, ymm0, 0xb1
  0859  vaddps ymm0, ymm0, ymm5
  085d  vcvtss2sd xmm0, xmm0, xmm0
  0861  vaddsd xmm0, xmm0, [rsp+0x60]
  0867  vmovsd [rsp+0x60], xmm0
  086d  vcvtsd2ss xmm0, xmm0, [rsp+0x60]
  0873  vmovss [rsp+0x58], xmm0
  0879  mov rdx, [rsp+0x40]
  087e  vbroadcastss ymm0, [rsp+0x58]
  0885  xor rbx, rbx
  0888  lea r15, [rbx+0x3e8]
  088f  lea r14, [r15-0x20]
  0893  cmp rbx, r14
  0896  jg short 0x8ec
  0898  vmovups ymm1, [rsp+rbx*4+0x80]
  08a1  vdivps ymm2, ymm1, ymm0
  08a5  vmovups [rdx+rbx*4], ymm2
  08aa  vmovups ymm1, [rsp+rbx*4+0xa0]
  08b3  vdivps ymm2, ymm1, ymm0
  08b7  vmovups [rdx+rbx*4+0x20], ymm2
  08bd  vmovups ymm1, [rsp+rbx*4+0xc0]
  08c6  vdivps ymm2, ymm1, ymm0
  08ca  vmovups [rdx+rbx*4+0x40], ymm2
  08d0  vmovups ymm1, [rsp+rbx*4+0xe0]
  08d9  vdivps ymm2, ymm1, ymm0
  08dd  vmovups [rdx+rbx*4+0x60], ymm2
  08e3  add rbx, 0x20
  08e7  cmp rbx, r14
  08ea  jle short 0x898
  08ec  lea r14, [r15-8]
  08f0  cmp rbx, r14
  08f3  jg short 0x910
  08f5  vmovups ymm1, [rsp+rbx*4+0x80]
  08fe  vdivps ymm2, ymm1, ymm0
  0902  vmovups [rdx+rbx*4], ymm2
  0907  add rbx, 8
  090b  cmp rbx, r14
  090e  jle short 0x8f5
  0910  cmp rbx, r15
  0913  jge short 0x93f
  0915  mov rcx, r15
  0918  sub rcx, rbx
  091b  lea rax, [0x9ac]
  0922  neg rcx
  0925  vmovdqu ymm15, [rax+rcx*4+0x20]
  092b  vmaskmovps ymm1, ymm15, [rsp+rbx*4+0x80]
  0935  vdivps ymm2, ymm1, ymm0
  0939  vmaskmovps [rdx+rbx*4], ymm15, ymm2
  093f  mov rax, [rsp+0x20]
  0944  add rax, 1
  094a  mov [rsp+0x20], rax
  094f  cmp rax, [rsp+0x10]
  0954  jl 0x58
  095a  mov rsp, [rsp]
  095e  pop r15
  0960  pop r14
  0962  pop r13
  0964  pop r12
  0966  pop rbp
  0967  pop rbx
  0968  vzeroupper
  096b  ret
  constants (128 bytes):
    ff800000 42b20000 c2d00000 4b4000fe 3fb8aa3b bf317218 3102e308 3ab5144a
    3c091d3a 3d2aac79 3e2aaa48 3efffffe 3f800000 4b40007f 3f000000 00000000
    ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff
    00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
